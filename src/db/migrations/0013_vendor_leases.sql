CREATE TABLE "vendor_leases" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "vendor_leases_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"call_id" integer NOT NULL,
	"kind" text NOT NULL,
	"provider" text NOT NULL,
	"key_ref" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "vendor_leases_kind_check" CHECK ("vendor_leases"."kind" in ('llm', 'stt', 'tts'))
);
--> statement-breakpoint
ALTER TABLE "vendor_leases" ADD CONSTRAINT "vendor_leases_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "vendor_leases" ADD CONSTRAINT "vendor_leases_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "vendor_leases_key_idx" ON "vendor_leases" USING btree ("organization_id","provider","key_ref","expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "vendor_leases_call_key_key" ON "vendor_leases" USING btree ("call_id","provider","key_ref");--> statement-breakpoint
CREATE INDEX "vendor_leases_expires_idx" ON "vendor_leases" USING btree ("expires_at");