ALTER TABLE `agents` ADD `created_ms` integer;--> statement-breakpoint
CREATE INDEX `agents_host_created` ON `agents` (`host_id`,`created_ms`);--> statement-breakpoint
ALTER TABLE `runs` ADD `created_ms` integer;--> statement-breakpoint
CREATE INDEX `runs_host_created` ON `runs` (`host_id`,`created_ms`);