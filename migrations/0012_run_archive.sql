ALTER TABLE `runs` ADD `archive_after_ms` integer;--> statement-breakpoint
CREATE INDEX `runs_archive` ON `runs` (`archive_after_ms`);