-- Spend recorded before the rollup: summed once from the spend rows D1 holds (archived runs' rows are in R2, not here).
INSERT INTO `spend_daily` (`workspace_id`, `day`, `host_id`, `agent`, `vendor`, `model`, `price_version`, `calls`, `unpriced_calls`,
    `microusd`, `input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens`)
  SELECT `workspace_id`, `day`, `host_id`, coalesce(`agent`, ''), `vendor`, `model`, `price_version`, sum(`calls`), sum(`unpriced_calls`),
    sum(`microusd`), sum(`input_tokens`), sum(`output_tokens`), sum(`cache_read_tokens`), sum(`cache_write_tokens`)
  FROM `spend` GROUP BY 1, 2, 3, 4, 5, 6, 7;
--> statement-breakpoint
INSERT INTO `spend_daily_runs` (`workspace_id`, `day`, `host_id`, `agent`, `runs`, `runs_last`)
  SELECT `workspace_id`, `day`, `host_id`, `agent`, count(*), sum(`last`) FROM (
    SELECT `workspace_id`, `day`, `host_id`, coalesce(`agent`, '') AS `agent`,
      `day` = max(`day`) OVER (PARTITION BY `run_id`) AS `last`
    FROM `spend` GROUP BY `run_id`, `day`
  ) GROUP BY 1, 2, 3, 4;
