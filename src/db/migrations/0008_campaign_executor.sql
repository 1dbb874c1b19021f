ALTER TABLE "campaign_executions" ADD COLUMN "checked_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "campaigns" ADD COLUMN "current_occurrence" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "campaign_executions_sms_idx" ON "campaign_executions" USING btree ("sms_id");--> statement-breakpoint
CREATE INDEX "campaign_executions_in_flight_idx" ON "campaign_executions" USING btree ("organization_id","campaign_id") WHERE "campaign_executions"."status" in ('pending', 'in_progress');--> statement-breakpoint
CREATE INDEX "campaign_schedules_next_run_idx" ON "campaign_schedules" USING btree ("next_run_at");