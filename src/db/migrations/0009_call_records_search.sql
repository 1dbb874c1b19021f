CREATE TABLE "rate_limit_windows" (
	"bucket" text PRIMARY KEY NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"count" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "call_search_documents" (
	"call_id" integer PRIMARY KEY NOT NULL,
	"organization_id" integer NOT NULL,
	"assistant_id" integer,
	"document" "tsvector" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "call_transcript_segments" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "call_transcript_segments_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"call_id" integer NOT NULL,
	"position" integer NOT NULL,
	"speaker" text NOT NULL,
	"text" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "call_transcript_segments_speaker_check" CHECK ("call_transcript_segments"."speaker" in ('user', 'assistant')),
	CONSTRAINT "call_transcript_segments_times_check" CHECK ("call_transcript_segments"."ended_at" >= "call_transcript_segments"."started_at")
);
--> statement-breakpoint
ALTER TABLE "call_search_documents" ADD CONSTRAINT "call_search_documents_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_search_documents" ADD CONSTRAINT "call_search_documents_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_search_documents" ADD CONSTRAINT "call_search_documents_assistant_id_assistants_id_fk" FOREIGN KEY ("assistant_id") REFERENCES "public"."assistants"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_transcript_segments" ADD CONSTRAINT "call_transcript_segments_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_transcript_segments" ADD CONSTRAINT "call_transcript_segments_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "call_search_documents_document_idx" ON "call_search_documents" USING gin ("document");--> statement-breakpoint
CREATE INDEX "call_search_documents_assistant_idx" ON "call_search_documents" USING btree ("assistant_id","call_id");--> statement-breakpoint
CREATE UNIQUE INDEX "call_transcript_segments_call_position_key" ON "call_transcript_segments" USING btree ("call_id","position");--> statement-breakpoint
CREATE INDEX "assistants_name_search_idx" ON "assistants" USING gin (to_tsvector('english', "name"));--> statement-breakpoint
-- Search documents for the calls recorded before search existed: their phone numbers' digit suffixes
-- (the same lexemes src/domains/calls/search-terms.ts writes for new calls); they have no transcript yet.
INSERT INTO "call_search_documents" ("call_id", "organization_id", "assistant_id", "document")
SELECT c."id", c."organization_id", c."assistant_id", setweight(array_to_tsvector(coalesce((
  SELECT array_agg(DISTINCT substr(nums.d, i))
  FROM (SELECT regexp_replace(n, '\D', '', 'g') AS d
        FROM unnest(ARRAY[c."from_phone_number", c."to_phone_number", c."customer_phone_number"]) AS n) AS nums,
       generate_series(1, length(nums.d) - 2) AS i
), '{}'::text[])), 'A')
FROM "calls" c;
