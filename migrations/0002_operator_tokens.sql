ALTER TABLE `enrollment_tokens` ADD `created_by` text;--> statement-breakpoint
ALTER TABLE `enrollment_tokens` ADD `revoked_ms` integer;--> statement-breakpoint
ALTER TABLE `operator_tokens` ADD `scope` text DEFAULT 'admin' NOT NULL;--> statement-breakpoint
ALTER TABLE `operator_tokens` ADD `expires_ms` integer;--> statement-breakpoint
ALTER TABLE `operator_tokens` ADD `created_by` text;--> statement-breakpoint
ALTER TABLE `operator_tokens` ADD `last_used_ms` integer;--> statement-breakpoint
ALTER TABLE `operator_tokens` ADD `revoked_by` text;