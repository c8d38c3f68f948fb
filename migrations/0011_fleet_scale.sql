DROP INDEX `runs_ws_time`;--> statement-breakpoint
DROP INDEX `runs_ws_status`;--> statement-breakpoint
DROP INDEX `runs_ws_host`;--> statement-breakpoint
DROP INDEX `runs_ws_tier`;--> statement-breakpoint
DROP INDEX `runs_ws_grade`;--> statement-breakpoint
DROP INDEX `runs_ws_agent`;--> statement-breakpoint
CREATE INDEX `runs_ws_order` ON `runs` (`workspace_id`,`last_frame_ms`,`id`);--> statement-breakpoint
CREATE INDEX `runs_ws_status_order` ON `runs` (`workspace_id`,`status`,`last_frame_ms`,`id`);--> statement-breakpoint
CREATE INDEX `runs_ws_host_order` ON `runs` (`workspace_id`,`host_id`,`last_frame_ms`,`id`);--> statement-breakpoint
CREATE INDEX `runs_ws_tier_order` ON `runs` (`workspace_id`,`tier`,`last_frame_ms`,`id`);--> statement-breakpoint
CREATE INDEX `runs_ws_grade_order` ON `runs` (`workspace_id`,`grade`,`last_frame_ms`,`id`);--> statement-breakpoint
CREATE INDEX `runs_ws_harness_order` ON `runs` (`workspace_id`,`harness`,`last_frame_ms`,`id`);--> statement-breakpoint
CREATE INDEX `runs_ws_agent_order` ON `runs` (`workspace_id`,`agent`,`last_frame_ms`,`id`);--> statement-breakpoint
DROP INDEX `agents_workspace`;--> statement-breakpoint
CREATE INDEX `agents_degraded` ON `agents` (`degraded_ms`);--> statement-breakpoint
CREATE INDEX `agents_workspace` ON `agents` (`workspace_id`,`name`);--> statement-breakpoint
DROP INDEX `hosts_workspace`;--> statement-breakpoint
CREATE INDEX `hosts_degraded` ON `hosts` (`degraded_ms`);--> statement-breakpoint
CREATE INDEX `hosts_workspace` ON `hosts` (`workspace_id`,`id`);--> statement-breakpoint
ALTER TABLE `workspaces` ADD `rows_kept_days` integer DEFAULT 90 NOT NULL;