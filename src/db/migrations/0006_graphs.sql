CREATE TABLE "assistant_graphs" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "assistant_graphs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"is_active" boolean DEFAULT true NOT NULL,
	"configuration" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_by_user_id" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "graph_edges" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "graph_edges_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"graph_id" integer NOT NULL,
	"from_node_id" integer NOT NULL,
	"to_node_id" integer NOT NULL,
	"condition_type" text NOT NULL,
	"intent_pattern" text,
	"natural_language_trigger" text,
	"mathematical_expression" text,
	"state_variable_condition" text,
	"condition_logic" text DEFAULT 'AND' NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"handoff_sentence" text,
	"description" text,
	"ordinal" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "graph_edges_condition_type_check" CHECK ("graph_edges"."condition_type" in ('intent', 'natural_language', 'mathematical', 'state_variable')),
	CONSTRAINT "graph_edges_logic_check" CHECK ("graph_edges"."condition_logic" in ('AND', 'OR'))
);
--> statement-breakpoint
CREATE TABLE "graph_nodes" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "graph_nodes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"graph_id" integer NOT NULL,
	"assistant_id" integer NOT NULL,
	"node_type" text NOT NULL,
	"position" jsonb DEFAULT '{"x":0,"y":0}'::jsonb NOT NULL,
	"configuration" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"ordinal" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "graph_nodes_type_check" CHECK ("graph_nodes"."node_type" in ('entry', 'standard', 'exit', 'escalation'))
);
--> statement-breakpoint
CREATE TABLE "graph_sessions" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "graph_sessions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"graph_id" integer NOT NULL,
	"call_sid" text,
	"call_id" integer,
	"current_node_id" integer,
	"context" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"turn_count" integer DEFAULT 0 NOT NULL,
	"node_turn_count" integer DEFAULT 0 NOT NULL,
	"node_entered_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp with time zone,
	"end_reason" text
);
--> statement-breakpoint
CREATE TABLE "graph_transitions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "graph_transitions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"organization_id" integer NOT NULL,
	"session_id" integer NOT NULL,
	"graph_id" integer NOT NULL,
	"from_node_id" integer NOT NULL,
	"to_node_id" integer NOT NULL,
	"edge_id" integer,
	"reason" text NOT NULL,
	"transitioned_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "assistant_graphs" ADD CONSTRAINT "assistant_graphs_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "assistant_graphs" ADD CONSTRAINT "assistant_graphs_created_by_user_id_users_id_fk" FOREIGN KEY ("created_by_user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_edges" ADD CONSTRAINT "graph_edges_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_edges" ADD CONSTRAINT "graph_edges_graph_id_assistant_graphs_id_fk" FOREIGN KEY ("graph_id") REFERENCES "public"."assistant_graphs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_edges" ADD CONSTRAINT "graph_edges_from_node_id_graph_nodes_id_fk" FOREIGN KEY ("from_node_id") REFERENCES "public"."graph_nodes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_edges" ADD CONSTRAINT "graph_edges_to_node_id_graph_nodes_id_fk" FOREIGN KEY ("to_node_id") REFERENCES "public"."graph_nodes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_nodes" ADD CONSTRAINT "graph_nodes_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_nodes" ADD CONSTRAINT "graph_nodes_graph_id_assistant_graphs_id_fk" FOREIGN KEY ("graph_id") REFERENCES "public"."assistant_graphs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_nodes" ADD CONSTRAINT "graph_nodes_assistant_fk" FOREIGN KEY ("organization_id","assistant_id") REFERENCES "public"."assistants"("organization_id","id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_sessions" ADD CONSTRAINT "graph_sessions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_sessions" ADD CONSTRAINT "graph_sessions_graph_id_assistant_graphs_id_fk" FOREIGN KEY ("graph_id") REFERENCES "public"."assistant_graphs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_sessions" ADD CONSTRAINT "graph_sessions_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_transitions" ADD CONSTRAINT "graph_transitions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_transitions" ADD CONSTRAINT "graph_transitions_session_id_graph_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."graph_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "assistant_graphs_organization_id_key" ON "assistant_graphs" USING btree ("organization_id","id");--> statement-breakpoint
CREATE INDEX "graph_edges_graph_idx" ON "graph_edges" USING btree ("graph_id","ordinal");--> statement-breakpoint
CREATE INDEX "graph_edges_from_idx" ON "graph_edges" USING btree ("from_node_id");--> statement-breakpoint
CREATE INDEX "graph_nodes_graph_idx" ON "graph_nodes" USING btree ("graph_id","ordinal");--> statement-breakpoint
CREATE INDEX "graph_nodes_assistant_idx" ON "graph_nodes" USING btree ("assistant_id");--> statement-breakpoint
CREATE INDEX "graph_sessions_graph_started_idx" ON "graph_sessions" USING btree ("graph_id","started_at");--> statement-breakpoint
CREATE INDEX "graph_sessions_call_sid_idx" ON "graph_sessions" USING btree ("organization_id","call_sid");--> statement-breakpoint
CREATE INDEX "graph_sessions_active_idx" ON "graph_sessions" USING btree ("graph_id") WHERE "graph_sessions"."ended_at" is null;--> statement-breakpoint
CREATE INDEX "graph_transitions_graph_time_idx" ON "graph_transitions" USING btree ("graph_id","transitioned_at");--> statement-breakpoint
CREATE INDEX "graph_transitions_session_idx" ON "graph_transitions" USING btree ("session_id","transitioned_at");--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD CONSTRAINT "phone_numbers_graph_fk" FOREIGN KEY ("organization_id","graph_id") REFERENCES "public"."assistant_graphs"("organization_id","id") ON DELETE no action ON UPDATE no action;