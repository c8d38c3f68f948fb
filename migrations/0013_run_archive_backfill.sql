-- Rows written before the archive had no due time: an ended run's is its last batch plus its workspace's rows_kept_days.
UPDATE `runs` SET `archive_after_ms` = coalesce(`last_received_ms`, `last_frame_ms`, `created_ms`, 0)
  + (SELECT `rows_kept_days` FROM `workspaces` WHERE `workspaces`.`id` = `runs`.`workspace_id`) * 86400000
  WHERE `status` <> 'live';
