ALTER TABLE `hosts` ADD `key_since_ms` integer;--> statement-breakpoint
ALTER TABLE `hosts` ADD `retired_keys` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `hosts` ADD `unenrolled_ms` integer;