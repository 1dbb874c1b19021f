CREATE TABLE "campaign_contacts" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "campaign_contacts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"campaign_id" integer NOT NULL,
	"phone_number" text NOT NULL,
	"name" text,
	"email" text,
	"company" text,
	"custom_fields" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"occurrence" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "campaign_contacts_status_check" CHECK ("campaign_contacts"."status" in ('pending', 'in_progress', 'completed', 'failed', 'skipped'))
);
--> statement-breakpoint
CREATE TABLE "campaign_executions" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "campaign_executions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"campaign_id" integer NOT NULL,
	"contact_id" integer NOT NULL,
	"attempt_number" integer NOT NULL,
	"occurrence" integer DEFAULT 0 NOT NULL,
	"channel" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"call_id" integer,
	"sms_id" uuid,
	"cost" numeric(14, 4),
	"executed_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"execution_data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "campaign_executions_status_check" CHECK ("campaign_executions"."status" in ('pending', 'in_progress', 'completed', 'failed', 'no_answer', 'busy', 'voicemail', 'skipped'))
);
--> statement-breakpoint
CREATE TABLE "campaign_schedules" (
	"campaign_id" integer PRIMARY KEY NOT NULL,
	"organization_id" integer NOT NULL,
	"schedule_type" text NOT NULL,
	"scheduled_at" timestamp with time zone,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"recurring_config" jsonb,
	"next_run_at" timestamp with time zone,
	"last_run_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "campaigns" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "campaigns_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"created_by_user_id" integer,
	"name" text NOT NULL,
	"description" text,
	"campaign_type" text NOT NULL,
	"status" text DEFAULT 'draft' NOT NULL,
	"assistant_id" integer,
	"welcome_message_template" text,
	"agenda_template" text,
	"end_call_message_template" text,
	"sms_message_template" text,
	"fallback_values" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"variable_mappings" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"available_variables" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"max_attempts" integer DEFAULT 3 NOT NULL,
	"retry_delay_minutes" integer DEFAULT 30 NOT NULL,
	"concurrency_limit" integer DEFAULT 5 NOT NULL,
	"total_contacts" integer DEFAULT 0 NOT NULL,
	"completed_contacts" integer DEFAULT 0 NOT NULL,
	"failed_contacts" integer DEFAULT 0 NOT NULL,
	"failure_reason" text,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "campaigns_status_check" CHECK ("campaigns"."status" in ('draft', 'scheduled', 'running', 'paused', 'completed', 'cancelled', 'failed')),
	CONSTRAINT "campaigns_type_check" CHECK ("campaigns"."campaign_type" in ('call', 'sms', 'mixed'))
);
--> statement-breakpoint
ALTER TABLE "campaign_contacts" ADD CONSTRAINT "campaign_contacts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_contacts" ADD CONSTRAINT "campaign_contacts_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_executions" ADD CONSTRAINT "campaign_executions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_executions" ADD CONSTRAINT "campaign_executions_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_executions" ADD CONSTRAINT "campaign_executions_contact_id_campaign_contacts_id_fk" FOREIGN KEY ("contact_id") REFERENCES "public"."campaign_contacts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_executions" ADD CONSTRAINT "campaign_executions_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_schedules" ADD CONSTRAINT "campaign_schedules_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaign_schedules" ADD CONSTRAINT "campaign_schedules_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_created_by_user_id_users_id_fk" FOREIGN KEY ("created_by_user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_assistant_id_assistants_id_fk" FOREIGN KEY ("assistant_id") REFERENCES "public"."assistants"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "campaign_contacts_phone_key" ON "campaign_contacts" USING btree ("campaign_id","phone_number");--> statement-breakpoint
CREATE INDEX "campaign_contacts_due_idx" ON "campaign_contacts" USING btree ("campaign_id","status","next_attempt_at");--> statement-breakpoint
CREATE UNIQUE INDEX "campaign_executions_attempt_key" ON "campaign_executions" USING btree ("contact_id","occurrence","attempt_number");--> statement-breakpoint
CREATE INDEX "campaign_executions_campaign_idx" ON "campaign_executions" USING btree ("campaign_id","id");--> statement-breakpoint
CREATE INDEX "campaign_executions_call_idx" ON "campaign_executions" USING btree ("call_id");--> statement-breakpoint
CREATE INDEX "campaigns_organization_idx" ON "campaigns" USING btree ("organization_id","id");--> statement-breakpoint
CREATE INDEX "campaigns_assistant_idx" ON "campaigns" USING btree ("assistant_id");