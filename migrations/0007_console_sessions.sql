CREATE TABLE `console_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`secret_hash` text NOT NULL,
	`workspace_id` text NOT NULL,
	`token_id` text NOT NULL,
	`csrf` text NOT NULL,
	`created_ms` integer NOT NULL,
	`expires_ms` integer NOT NULL,
	`revoked_ms` integer
);
--> statement-breakpoint
CREATE INDEX `console_sessions_token` ON `console_sessions` (`token_id`);