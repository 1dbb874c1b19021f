-- The unique index first: the foreign key below references it.
CREATE UNIQUE INDEX "assistants_organization_id_key" ON "assistants" USING btree ("organization_id","id");--> statement-breakpoint
CREATE TABLE "phone_numbers" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "phone_numbers_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"phone_number" text NOT NULL,
	"provider" text NOT NULL,
	"friendly_name" text,
	"assistant_id" integer,
	"graph_id" integer,
	"sms_rate_per_second" double precision,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "phone_numbers_one_target" CHECK ("phone_numbers"."assistant_id" is null or "phone_numbers"."graph_id" is null),
	CONSTRAINT "phone_numbers_provider_check" CHECK ("phone_numbers"."provider" in ('carrier_a', 'carrier_b', 'carrier_c', 'sip_trunk'))
);
--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD CONSTRAINT "phone_numbers_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD CONSTRAINT "phone_numbers_assistant_fk" FOREIGN KEY ("organization_id","assistant_id") REFERENCES "public"."assistants"("organization_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "phone_numbers_phone_number_key" ON "phone_numbers" USING btree ("phone_number");--> statement-breakpoint
CREATE INDEX "phone_numbers_organization_idx" ON "phone_numbers" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "phone_numbers_assistant_idx" ON "phone_numbers" USING btree ("assistant_id");
