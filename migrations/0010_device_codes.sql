CREATE TABLE `device_codes` (
	`id` text PRIMARY KEY NOT NULL,
	`secret_hash` text NOT NULL,
	`user_code_hash` text NOT NULL,
	`purpose` text NOT NULL,
	`public_key` text,
	`hostname` text NOT NULL,
	`username` text NOT NULL,
	`os` text NOT NULL,
	`harnesses` text NOT NULL,
	`asked_workspace` text,
	`address` text NOT NULL,
	`created_ms` integer NOT NULL,
	`expires_ms` integer NOT NULL,
	`interval_s` integer NOT NULL,
	`last_poll_ms` integer,
	`last_poll_fast` integer DEFAULT 0 NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`workspace_id` text,
	`decided_by` text,
	`decided_ms` integer,
	`scope` text,
	`issued_ms` integer,
	`issued_token` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `device_codes_user_code` ON `device_codes` (`user_code_hash`);--> statement-breakpoint
CREATE INDEX `device_codes_expires` ON `device_codes` (`expires_ms`);--> statement-breakpoint
CREATE TABLE `registered_agents` (
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`created_ms` integer NOT NULL,
	`created_by` text,
	PRIMARY KEY(`workspace_id`, `name`)
);
--> statement-breakpoint
ALTER TABLE `enrollment_tokens` ADD `public_key` text;--> statement-breakpoint
ALTER TABLE `enrollment_tokens` ADD `agent` text;