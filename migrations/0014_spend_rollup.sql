CREATE TABLE `spend_daily` (
	`workspace_id` text NOT NULL,
	`day` text NOT NULL,
	`host_id` text NOT NULL,
	`agent` text NOT NULL,
	`vendor` text NOT NULL,
	`model` text NOT NULL,
	`price_version` text NOT NULL,
	`calls` integer NOT NULL,
	`unpriced_calls` integer NOT NULL,
	`microusd` integer NOT NULL,
	`input_tokens` integer NOT NULL,
	`output_tokens` integer NOT NULL,
	`cache_read_tokens` integer NOT NULL,
	`cache_write_tokens` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `day`, `host_id`, `agent`, `vendor`, `model`, `price_version`)
);
--> statement-breakpoint
CREATE TABLE `spend_daily_runs` (
	`workspace_id` text NOT NULL,
	`day` text NOT NULL,
	`host_id` text NOT NULL,
	`agent` text NOT NULL,
	`runs` integer NOT NULL,
	`runs_last` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `day`, `host_id`, `agent`)
);
