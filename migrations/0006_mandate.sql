CREATE TABLE `agent_pauses` (
	`workspace_id` text NOT NULL,
	`host_id` text NOT NULL,
	`name` text NOT NULL,
	`paused_ms` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `host_id`, `name`)
);
--> statement-breakpoint
CREATE TABLE `spend` (
	`run_id` text NOT NULL,
	`day` text NOT NULL,
	`vendor` text NOT NULL,
	`model` text NOT NULL,
	`price_version` text NOT NULL,
	`workspace_id` text NOT NULL,
	`host_id` text NOT NULL,
	`agent` text,
	`calls` integer NOT NULL,
	`unpriced_calls` integer NOT NULL,
	`microusd` integer NOT NULL,
	`input_tokens` integer NOT NULL,
	`output_tokens` integer NOT NULL,
	`cache_read_tokens` integer NOT NULL,
	`cache_write_tokens` integer NOT NULL,
	`version` integer NOT NULL,
	PRIMARY KEY(`run_id`, `day`, `vendor`, `model`, `price_version`)
);
--> statement-breakpoint
CREATE INDEX `spend_ws_day` ON `spend` (`workspace_id`,`day`);--> statement-breakpoint
CREATE INDEX `spend_ws_host_day` ON `spend` (`workspace_id`,`host_id`,`day`);--> statement-breakpoint
ALTER TABLE `runs` ADD `unpriced_calls` integer DEFAULT 0 NOT NULL;