CREATE TABLE "knowledge_chunks" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "knowledge_chunks_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"assistant_id" integer NOT NULL,
	"document_id" integer NOT NULL,
	"generation" integer NOT NULL,
	"position" integer NOT NULL,
	"content" text NOT NULL,
	"tokens" integer NOT NULL,
	"location" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"embedding" real[],
	"dimensions" integer,
	"search_vector" "tsvector" GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "knowledge_chunks_dimensions_check" CHECK ("knowledge_chunks"."dimensions" is null or "knowledge_chunks"."dimensions" > 0)
);
--> statement-breakpoint
CREATE TABLE "knowledge_documents" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "knowledge_documents_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"assistant_id" integer NOT NULL,
	"name" text NOT NULL,
	"category" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"file_name" text NOT NULL,
	"content_type" text NOT NULL,
	"format" text NOT NULL,
	"bytes" bigint NOT NULL,
	"storage_key" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"settings" jsonb NOT NULL,
	"total_chunks" integer,
	"processed_chunks" integer DEFAULT 0 NOT NULL,
	"retrieval_mode" text,
	"embedding_model" text,
	"embedding_dimensions" integer,
	"error" text,
	"notice" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"processed_at" timestamp with time zone,
	CONSTRAINT "knowledge_documents_format_check" CHECK ("knowledge_documents"."format" in ('text', 'markdown', 'html', 'pdf', 'docx')),
	CONSTRAINT "knowledge_documents_status_check" CHECK ("knowledge_documents"."status" in ('pending', 'processing', 'completed', 'failed')),
	CONSTRAINT "knowledge_documents_retrieval_mode_check" CHECK ("knowledge_documents"."retrieval_mode" is null or "knowledge_documents"."retrieval_mode" in ('hybrid', 'full_text')),
	CONSTRAINT "knowledge_documents_processed_check" CHECK ("knowledge_documents"."processed_chunks" >= 0)
);
--> statement-breakpoint
ALTER TABLE "call_turns" ADD COLUMN "retrieval_ms" integer;--> statement-breakpoint
ALTER TABLE "call_turns" ADD COLUMN "passages" jsonb;--> statement-breakpoint
ALTER TABLE "knowledge_chunks" ADD CONSTRAINT "knowledge_chunks_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_chunks" ADD CONSTRAINT "knowledge_chunks_assistant_id_assistants_id_fk" FOREIGN KEY ("assistant_id") REFERENCES "public"."assistants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_chunks" ADD CONSTRAINT "knowledge_chunks_document_id_knowledge_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."knowledge_documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_documents" ADD CONSTRAINT "knowledge_documents_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_documents" ADD CONSTRAINT "knowledge_documents_assistant_id_assistants_id_fk" FOREIGN KEY ("assistant_id") REFERENCES "public"."assistants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "knowledge_chunks_document_position_key" ON "knowledge_chunks" USING btree ("document_id","generation","position");--> statement-breakpoint
CREATE INDEX "knowledge_chunks_assistant_idx" ON "knowledge_chunks" USING btree ("assistant_id");--> statement-breakpoint
CREATE INDEX "knowledge_chunks_search_idx" ON "knowledge_chunks" USING gin ("search_vector");--> statement-breakpoint
CREATE INDEX "knowledge_documents_assistant_idx" ON "knowledge_documents" USING btree ("assistant_id","id");--> statement-breakpoint
-- pgvector where the database has it (PGlite ships it; a server when the package is installed and
-- the role may create extensions): nearest-neighbour search over the chunks' embeddings then uses
-- HNSW indexes (domains/knowledge/vector-index.ts). Without it, retrieval scans the vectors exactly.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
  END IF;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'pgvector is installed but this role may not create it: knowledge retrieval scans vectors exactly';
END $$;
