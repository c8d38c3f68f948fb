ALTER TABLE `runs` ADD `derived_outcome` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `derived_reason` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `model_calls` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `model_failed` integer DEFAULT 0 NOT NULL;