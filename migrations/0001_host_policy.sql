ALTER TABLE `hosts` ADD `policy_ms` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `host_stopped` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `paused_ms` integer;--> statement-breakpoint
CREATE INDEX `runs_host_paused` ON `runs` (`host_id`,`paused_ms`);--> statement-breakpoint
-- Pause state leaves the workspace's policy: each run it paused is marked on its own row (hosts.status already holds suspension).
UPDATE `runs` SET `paused_ms` = `updated_ms` WHERE `id` IN (SELECT `value` FROM `policies`, json_each(`policies`.`payload`, '$.paused_runs') WHERE `policies`.`workspace_id` = `runs`.`workspace_id`);--> statement-breakpoint
UPDATE `policies` SET `payload` = json_set(`payload`, '$.paused_runs', json('[]'), '$.suspended_hosts', json('[]')) WHERE json_array_length(`payload`, '$.paused_runs') > 0 OR json_array_length(`payload`, '$.suspended_hosts') > 0;
