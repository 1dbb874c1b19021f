CREATE TABLE "call_turns" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "call_turns_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"call_id" integer NOT NULL,
	"position" integer NOT NULL,
	"kind" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"user_text" text NOT NULL,
	"assistant_text" text NOT NULL,
	"interrupted" boolean NOT NULL,
	"llm_provider" text,
	"end_to_end_ms" integer,
	"endpointing_ms" integer,
	"stt_delay_ms" integer,
	"llm_ttft_ms" integer,
	"tts_ttfb_ms" integer,
	"platform_ms" integer,
	"marks" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "call_turns_kind_check" CHECK ("call_turns"."kind" in ('greeting', 'reply', 'idle', 'goodbye')),
	CONSTRAINT "call_turns_position_check" CHECK ("call_turns"."position" >= 0)
);
--> statement-breakpoint
ALTER TABLE "call_turns" ADD CONSTRAINT "call_turns_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_turns" ADD CONSTRAINT "call_turns_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "call_turns_call_position_key" ON "call_turns" USING btree ("call_id","position");