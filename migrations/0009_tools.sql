CREATE TABLE `tool_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`agent` text NOT NULL,
	`secret_hash` text NOT NULL,
	`created_ms` integer NOT NULL,
	`expires_ms` integer NOT NULL,
	`created_by` text NOT NULL,
	`revoked_ms` integer
);
--> statement-breakpoint
CREATE INDEX `tool_tokens_workspace` ON `tool_tokens` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `tools` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`title` text,
	`description` text NOT NULL,
	`input_schema` text NOT NULL,
	`annotations` text,
	`binding` text NOT NULL,
	`access` text DEFAULT '[]' NOT NULL,
	`cost_microusd` integer DEFAULT 0 NOT NULL,
	`limits` text DEFAULT '[]' NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`def_sha256` text NOT NULL,
	`upstream_sha256` text,
	`drift` text,
	`checked_ms` integer,
	`credential` text,
	`credential_key_id` text,
	`credential_set_ms` integer,
	`version` integer DEFAULT 1 NOT NULL,
	`created_ms` integer NOT NULL,
	`updated_ms` integer NOT NULL,
	`approved_ms` integer NOT NULL,
	`approved_by` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tools_ws_name` ON `tools` (`workspace_id`,`name`);--> statement-breakpoint
CREATE INDEX `tools_checked` ON `tools` (`checked_ms`);