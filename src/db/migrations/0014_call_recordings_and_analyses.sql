CREATE TABLE "call_analyses" (
	"call_id" integer PRIMARY KEY NOT NULL,
	"organization_id" integer NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"summary" text,
	"sentiment" text,
	"sentiment_score" real,
	"structured_data" jsonb,
	"structured_data_error" text,
	"provider" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "call_analyses_status_check" CHECK ("call_analyses"."status" in ('pending', 'completed', 'failed', 'skipped')),
	CONSTRAINT "call_analyses_sentiment_check" CHECK ("call_analyses"."sentiment" is null or "call_analyses"."sentiment" in ('positive', 'neutral', 'negative')),
	CONSTRAINT "call_analyses_sentiment_score_check" CHECK ("call_analyses"."sentiment_score" is null or "call_analyses"."sentiment_score" between -1 and 1)
);
--> statement-breakpoint
CREATE TABLE "call_recordings" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "call_recordings_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"call_id" integer NOT NULL,
	"status" text DEFAULT 'recording' NOT NULL,
	"storage_key" text NOT NULL,
	"content_type" text DEFAULT 'audio/wav' NOT NULL,
	"channels" integer NOT NULL,
	"sample_rate" integer NOT NULL,
	"bytes" bigint,
	"duration_ms" integer,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "call_recordings_status_check" CHECK ("call_recordings"."status" in ('recording', 'completed', 'failed')),
	CONSTRAINT "call_recordings_channels_check" CHECK ("call_recordings"."channels" in (1, 2))
);
--> statement-breakpoint
ALTER TABLE "call_analyses" ADD CONSTRAINT "call_analyses_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_analyses" ADD CONSTRAINT "call_analyses_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_recordings" ADD CONSTRAINT "call_recordings_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_recordings" ADD CONSTRAINT "call_recordings_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "call_recordings_call_key" ON "call_recordings" USING btree ("call_id");