CREATE TABLE "graph_node_rollups" (
	"organization_id" integer NOT NULL,
	"graph_id" integer NOT NULL,
	"hours" smallint NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"node_id" integer NOT NULL,
	"sessions_started" integer DEFAULT 0 NOT NULL,
	"sessions_entered" integer DEFAULT 0 NOT NULL,
	"sessions_ended" integer DEFAULT 0 NOT NULL,
	"session_micros" bigint DEFAULT 0 NOT NULL,
	"visits" integer DEFAULT 0 NOT NULL,
	"visit_micros" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "graph_node_rollups_pkey" PRIMARY KEY("organization_id","graph_id","hours","period_start","node_id"),
	CONSTRAINT "graph_node_rollups_hours_check" CHECK ("graph_node_rollups"."hours" in (1, 24))
);
--> statement-breakpoint
CREATE TABLE "graph_transition_rollups" (
	"organization_id" integer NOT NULL,
	"graph_id" integer NOT NULL,
	"hours" smallint NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"from_node_id" integer NOT NULL,
	"to_node_id" integer NOT NULL,
	"transitions" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "graph_transition_rollups_pkey" PRIMARY KEY("organization_id","graph_id","hours","period_start","from_node_id","to_node_id"),
	CONSTRAINT "graph_transition_rollups_hours_check" CHECK ("graph_transition_rollups"."hours" in (1, 24))
);
--> statement-breakpoint
ALTER TABLE "graph_node_rollups" ADD CONSTRAINT "graph_node_rollups_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_node_rollups" ADD CONSTRAINT "graph_node_rollups_graph_fk" FOREIGN KEY ("organization_id","graph_id") REFERENCES "public"."assistant_graphs"("organization_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_transition_rollups" ADD CONSTRAINT "graph_transition_rollups_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_transition_rollups" ADD CONSTRAINT "graph_transition_rollups_graph_fk" FOREIGN KEY ("organization_id","graph_id") REFERENCES "public"."assistant_graphs"("organization_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Backfill: the rollups of the sessions and transitions recorded before this migration, counted as
-- domains/graphs/rollups.ts counts them from now on: everything a session did goes to the hour and
-- the UTC day of its start; a visit lasts from entering the node (the previous transition, or the
-- start) to leaving it (the next transition, or the end); times in whole microseconds.
INSERT INTO "graph_node_rollups" ("organization_id", "graph_id", "hours", "period_start", "node_id", "sessions_started", "sessions_entered", "sessions_ended", "session_micros", "visits", "visit_micros")
WITH "moves" AS (
	SELECT tr."session_id", tr."from_node_id", row_number() OVER w AS "step",
		(extract(epoch FROM tr."transitioned_at" - coalesce(lag(tr."transitioned_at") OVER w, gs."started_at")) * 1000000)::bigint AS "visit_micros"
	FROM "graph_transitions" tr JOIN "graph_sessions" gs ON gs."id" = tr."session_id"
	WINDOW w AS (PARTITION BY tr."session_id" ORDER BY tr."transitioned_at", tr."id")
), "facts" AS (
	-- each node a session left: one finished visit (the first one left is where it started)
	SELECT "session_id", "from_node_id" AS "node_id", ("step" = 1)::int AS "started", 1 AS "visits", "visit_micros",
		0 AS "ended", 0::bigint AS "session_micros"
	FROM "moves"
	UNION ALL
	-- the node it is at: where it started when it never moved; where it ended, with its last visit, when it ended
	SELECT gs."id", gs."current_node_id",
		(NOT EXISTS (SELECT 1 FROM "graph_transitions" t WHERE t."session_id" = gs."id"))::int,
		(gs."ended_at" IS NOT NULL)::int,
		coalesce((extract(epoch FROM gs."ended_at" - gs."node_entered_at") * 1000000)::bigint, 0),
		(gs."ended_at" IS NOT NULL)::int,
		coalesce((extract(epoch FROM gs."ended_at" - gs."started_at") * 1000000)::bigint, 0)
	FROM "graph_sessions" gs WHERE gs."current_node_id" IS NOT NULL
), "per_session" AS (
	-- one row per session and node it visited (entered)
	SELECT "session_id", "node_id", sum("started") AS "started", sum("visits") AS "visits", sum("visit_micros") AS "visit_micros",
		sum("ended") AS "ended", sum("session_micros") AS "session_micros"
	FROM "facts" GROUP BY "session_id", "node_id"
)
SELECT gs."organization_id", gs."graph_id", s."hours",
	date_trunc(CASE WHEN s."hours" = 1 THEN 'hour' ELSE 'day' END, gs."started_at", 'UTC'), p."node_id",
	sum(p."started"), count(*), sum(p."ended"), sum(p."session_micros"), sum(p."visits"), sum(p."visit_micros")
FROM "per_session" p JOIN "graph_sessions" gs ON gs."id" = p."session_id" CROSS JOIN (VALUES (1::smallint), (24::smallint)) AS s("hours")
GROUP BY 1, 2, 3, 4, 5;
--> statement-breakpoint
INSERT INTO "graph_transition_rollups" ("organization_id", "graph_id", "hours", "period_start", "from_node_id", "to_node_id", "transitions")
SELECT gs."organization_id", gs."graph_id", s."hours",
	date_trunc(CASE WHEN s."hours" = 1 THEN 'hour' ELSE 'day' END, gs."started_at", 'UTC'), tr."from_node_id", tr."to_node_id", count(*)
FROM "graph_transitions" tr JOIN "graph_sessions" gs ON gs."id" = tr."session_id" CROSS JOIN (VALUES (1::smallint), (24::smallint)) AS s("hours")
GROUP BY 1, 2, 3, 4, 5, 6;
