ALTER TABLE "api_keys" DROP COLUMN "rate_window_start";--> statement-breakpoint
ALTER TABLE "api_keys" DROP COLUMN "rate_window_count";