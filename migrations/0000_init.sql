CREATE TABLE `agents` (
	`host_id` text NOT NULL,
	`name` text NOT NULL,
	`workspace_id` text NOT NULL,
	`kind` text NOT NULL,
	`wrapped_ms` integer,
	`first_seen_ms` integer,
	`last_seen_ms` integer,
	`last_delivered_ms` integer,
	`pending_since_ms` integer,
	`last_refused_ms` integer,
	`hooks_missing` integer DEFAULT 0 NOT NULL,
	`degraded_ms` integer,
	PRIMARY KEY(`host_id`, `name`)
);
--> statement-breakpoint
CREATE INDEX `agents_workspace` ON `agents` (`workspace_id`);--> statement-breakpoint
CREATE INDEX `agents_pending` ON `agents` (`pending_since_ms`);--> statement-breakpoint
CREATE TABLE `enrollment_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`secret_hash` text NOT NULL,
	`created_ms` integer NOT NULL,
	`expires_ms` integer NOT NULL,
	`used_ms` integer,
	`used_by` text
);
--> statement-breakpoint
CREATE INDEX `enrollment_tokens_workspace` ON `enrollment_tokens` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `hosts` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`public_key` text NOT NULL,
	`key_id` text NOT NULL,
	`hostname` text NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`enrolled_ms` integer NOT NULL,
	`last_seen_ms` integer,
	`degraded_ms` integer
);
--> statement-breakpoint
CREATE INDEX `hosts_workspace` ON `hosts` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `operator_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`secret_hash` text NOT NULL,
	`created_ms` integer NOT NULL,
	`revoked_ms` integer
);
--> statement-breakpoint
CREATE INDEX `operator_tokens_workspace` ON `operator_tokens` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `policies` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`payload` text NOT NULL,
	`etag` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`updated_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`host_id` text NOT NULL,
	`harness` text NOT NULL,
	`agent` text,
	`session_id` text NOT NULL,
	`status` text NOT NULL,
	`outcome` text,
	`tier` text NOT NULL,
	`tier_reason` text NOT NULL,
	`grade` text NOT NULL,
	`grade_reason` text NOT NULL,
	`spend_microusd` integer DEFAULT 0 NOT NULL,
	`frame_count` integer DEFAULT 0 NOT NULL,
	`lock_count` integer DEFAULT 0 NOT NULL,
	`gap_count` integer DEFAULT 0 NOT NULL,
	`first_frame_ms` integer,
	`last_frame_ms` integer,
	`last_received_ms` integer,
	`version` integer DEFAULT 0 NOT NULL,
	`updated_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `runs_cron` ON `runs` (`status`,`last_received_ms`);--> statement-breakpoint
CREATE INDEX `runs_ws_time` ON `runs` (`workspace_id`,`last_frame_ms`);--> statement-breakpoint
CREATE INDEX `runs_ws_status` ON `runs` (`workspace_id`,`status`,`last_frame_ms`);--> statement-breakpoint
CREATE INDEX `runs_ws_host` ON `runs` (`workspace_id`,`host_id`,`last_frame_ms`);--> statement-breakpoint
CREATE INDEX `runs_ws_tier` ON `runs` (`workspace_id`,`tier`,`last_frame_ms`);--> statement-breakpoint
CREATE INDEX `runs_ws_grade` ON `runs` (`workspace_id`,`grade`,`last_frame_ms`);--> statement-breakpoint
CREATE INDEX `runs_ws_agent` ON `runs` (`workspace_id`,`harness`,`last_frame_ms`);--> statement-breakpoint
CREATE TABLE `workspaces` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`retention_mode` text DEFAULT 'keep' NOT NULL,
	`retention_keep` text NOT NULL,
	`mode` text DEFAULT 'enforce' NOT NULL,
	`created_ms` integer NOT NULL
);
