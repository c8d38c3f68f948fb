CREATE TABLE `server_keys` (
	`key_id` text PRIMARY KEY NOT NULL,
	`public_key` text NOT NULL,
	`not_before_ms` integer NOT NULL,
	`not_after_ms` integer,
	`endorsed_by` text,
	`endorsement` text
);
