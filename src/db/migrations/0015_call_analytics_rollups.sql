CREATE TABLE "call_rollups" (
	"organization_id" integer NOT NULL,
	"hours" smallint NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"assistant_id" integer NOT NULL,
	"phone_number" text NOT NULL,
	"calls" integer DEFAULT 0 NOT NULL,
	"completed" integer DEFAULT 0 NOT NULL,
	"voicemail" integer DEFAULT 0 NOT NULL,
	"busy" integer DEFAULT 0 NOT NULL,
	"no_answer" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"canceled" integer DEFAULT 0 NOT NULL,
	"inbound" integer DEFAULT 0 NOT NULL,
	"outbound" integer DEFAULT 0 NOT NULL,
	"duration_seconds" bigint DEFAULT 0 NOT NULL,
	"duration_seconds_histogram" integer[] NOT NULL,
	"cost" numeric(14, 4) DEFAULT 0 NOT NULL,
	"transfers" integer DEFAULT 0 NOT NULL,
	"turns" integer DEFAULT 0 NOT NULL,
	"interrupted_turns" integer DEFAULT 0 NOT NULL,
	"end_to_end_ms_histogram" integer[] NOT NULL,
	"llm_ttft_ms_histogram" integer[] NOT NULL,
	"tts_ttfb_ms_histogram" integer[] NOT NULL,
	"stt_delay_ms_histogram" integer[] NOT NULL,
	"platform_ms_histogram" integer[] NOT NULL,
	CONSTRAINT "call_rollups_pkey" PRIMARY KEY("organization_id","hours","period_start","assistant_id","phone_number"),
	CONSTRAINT "call_rollups_hours_check" CHECK ("call_rollups"."hours" in (1, 24))
);
--> statement-breakpoint
CREATE TABLE "call_tool_rollups" (
	"organization_id" integer NOT NULL,
	"hours" smallint NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"assistant_id" integer NOT NULL,
	"phone_number" text NOT NULL,
	"tool" text NOT NULL,
	"uses" integer DEFAULT 0 NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "call_tool_rollups_pkey" PRIMARY KEY("organization_id","hours","period_start","assistant_id","phone_number","tool"),
	CONSTRAINT "call_tool_rollups_hours_check" CHECK ("call_tool_rollups"."hours" in (1, 24))
);
--> statement-breakpoint
ALTER TABLE "call_rollups" ADD CONSTRAINT "call_rollups_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "call_tool_rollups" ADD CONSTRAINT "call_tool_rollups_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Backfill: the rollups of the calls, turns and events recorded before this migration, counted as
-- domains/calls/rollups.ts counts them from now on (the bounds are HISTOGRAM_BOUNDS of histogram.ts;
-- a histogram holds its lowest to highest counted bucket, at subscripts bucket + 1).
INSERT INTO "call_rollups" ("organization_id", "hours", "period_start", "assistant_id", "phone_number", "calls", "completed", "voicemail", "busy", "no_answer", "failed", "canceled", "inbound", "outbound", "duration_seconds", "duration_seconds_histogram", "cost", "end_to_end_ms_histogram", "llm_ttft_ms_histogram", "tts_ttfb_ms_histogram", "stt_delay_ms_histogram", "platform_ms_histogram")
WITH "keyed" AS (
	SELECT c."organization_id", s."hours",
		date_trunc(CASE WHEN s."hours" = 1 THEN 'hour' ELSE 'day' END, c."created_at" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS "period_start",
		coalesce(c."assistant_id", 0) AS "assistant_id", c."from_phone_number" AS "phone_number",
		CASE WHEN c."status" = 'completed' AND c."call_meta"->>'answered_by' = 'machine' THEN 'voicemail' ELSE c."status" END AS "outcome",
		c."direction", coalesce(c."duration", 0) AS "duration", coalesce(c."cost", 0) AS "cost"
	FROM "calls" c CROSS JOIN (VALUES (1::smallint), (24::smallint)) AS s("hours")
	WHERE c."status" IN ('completed', 'busy', 'no-answer', 'failed', 'canceled')
), "buckets" AS (
	SELECT "organization_id", "hours", "period_start", "assistant_id", "phone_number", jsonb_object_agg("bucket", "n") AS "counts"
	FROM (
		SELECT "organization_id", "hours", "period_start", "assistant_id", "phone_number",
			width_bucket("duration", '{1,2,3,4,5,6,7,8,10,11,13,16,19,23,27,32,38,45,54,64,76,91,108,128,152,181,215,256,304,362,431,512,609,724,861,1024,1218,1448,1722,2048,2435,2896,3444,4096,4871,5793,6889,8192,9742,11585,13777,16384,19484,23170,27554,32768,38968,46341,55109,65536,77936,92682,110218,131072}'::int[]) AS "bucket", count(*) AS "n"
		FROM "keyed" WHERE "outcome" IN ('completed', 'voicemail')
		GROUP BY 1, 2, 3, 4, 5, 6
	) AS b
	GROUP BY 1, 2, 3, 4, 5
)
SELECT k."organization_id", k."hours", k."period_start", k."assistant_id", k."phone_number",
	count(*), count(*) FILTER (WHERE k."outcome" = 'completed'), count(*) FILTER (WHERE k."outcome" = 'voicemail'),
	count(*) FILTER (WHERE k."outcome" = 'busy'), count(*) FILTER (WHERE k."outcome" = 'no-answer'),
	count(*) FILTER (WHERE k."outcome" = 'failed'), count(*) FILTER (WHERE k."outcome" = 'canceled'),
	count(*) FILTER (WHERE k."direction" = 'inbound'), count(*) FILTER (WHERE k."direction" = 'outbound'),
	coalesce(sum(k."duration") FILTER (WHERE k."outcome" IN ('completed', 'voicemail')), 0),
	coalesce((SELECT ('[' || (r."lo" + 1) || ':' || (r."hi" + 1) || ']={' || string_agg(coalesce(b."counts"->>g::text, '0'), ',' ORDER BY g) || '}')::int[]
		FROM (SELECT min(k::int) AS "lo", max(k::int) AS "hi" FROM jsonb_object_keys(b."counts") AS k) AS r, generate_series(r."lo", r."hi") AS g
		GROUP BY r."lo", r."hi"), '{}'::int[]),
	sum(k."cost"),
	'{}'::int[], '{}'::int[], '{}'::int[], '{}'::int[], '{}'::int[]
FROM "keyed" k LEFT JOIN "buckets" b USING ("organization_id", "hours", "period_start", "assistant_id", "phone_number")
GROUP BY k."organization_id", k."hours", k."period_start", k."assistant_id", k."phone_number", b."counts";
--> statement-breakpoint
INSERT INTO "call_rollups" ("organization_id", "hours", "period_start", "assistant_id", "phone_number", "turns", "interrupted_turns", "duration_seconds_histogram", "end_to_end_ms_histogram", "llm_ttft_ms_histogram", "tts_ttfb_ms_histogram", "stt_delay_ms_histogram", "platform_ms_histogram")
WITH "keyed" AS (
	SELECT c."organization_id", s."hours",
		date_trunc(CASE WHEN s."hours" = 1 THEN 'hour' ELSE 'day' END, c."created_at" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS "period_start",
		coalesce(c."assistant_id", 0) AS "assistant_id", c."from_phone_number" AS "phone_number",
		t."kind", t."interrupted", t."end_to_end_ms", t."llm_ttft_ms", t."tts_ttfb_ms", t."stt_delay_ms", t."platform_ms"
	FROM "call_turns" t JOIN "calls" c ON c."id" = t."call_id" CROSS JOIN (VALUES (1::smallint), (24::smallint)) AS s("hours")
), "buckets" AS (
	SELECT "organization_id", "hours", "period_start", "assistant_id", "phone_number", "metric", jsonb_object_agg("bucket", "n") AS "counts"
	FROM (
		SELECT "organization_id", "hours", "period_start", "assistant_id", "phone_number", v."metric",
			width_bucket(v."value", '{1,2,3,4,5,6,7,8,10,11,13,16,19,23,27,32,38,45,54,64,76,91,108,128,152,181,215,256,304,362,431,512,609,724,861,1024,1218,1448,1722,2048,2435,2896,3444,4096,4871,5793,6889,8192,9742,11585,13777,16384,19484,23170,27554,32768,38968,46341,55109,65536,77936,92682,110218,131072}'::int[]) AS "bucket", count(*) AS "n"
		FROM "keyed" CROSS JOIN LATERAL (VALUES ('end_to_end', "end_to_end_ms"), ('llm_ttft', "llm_ttft_ms"),
			('tts_ttfb', "tts_ttfb_ms"), ('stt_delay', "stt_delay_ms"), ('platform', "platform_ms")) AS v("metric", "value")
		WHERE "kind" = 'reply' AND v."value" IS NOT NULL
		GROUP BY 1, 2, 3, 4, 5, 6, 7
	) AS b
	GROUP BY 1, 2, 3, 4, 5, 6
), "histograms" AS (
	SELECT "organization_id", "hours", "period_start", "assistant_id", "phone_number", "metric",
		coalesce((SELECT ('[' || (r."lo" + 1) || ':' || (r."hi" + 1) || ']={' || string_agg(coalesce("counts"->>g::text, '0'), ',' ORDER BY g) || '}')::int[]
		FROM (SELECT min(k::int) AS "lo", max(k::int) AS "hi" FROM jsonb_object_keys("counts") AS k) AS r, generate_series(r."lo", r."hi") AS g
		GROUP BY r."lo", r."hi"), '{}'::int[]) AS "counts"
	FROM "buckets"
), "pivot" AS (
	SELECT "organization_id", "hours", "period_start", "assistant_id", "phone_number",
		max("counts") FILTER (WHERE "metric" = 'end_to_end') AS "end_to_end", max("counts") FILTER (WHERE "metric" = 'llm_ttft') AS "llm_ttft",
		max("counts") FILTER (WHERE "metric" = 'tts_ttfb') AS "tts_ttfb", max("counts") FILTER (WHERE "metric" = 'stt_delay') AS "stt_delay",
		max("counts") FILTER (WHERE "metric" = 'platform') AS "platform"
	FROM "histograms" GROUP BY 1, 2, 3, 4, 5
), "figures" AS (
	SELECT "organization_id", "hours", "period_start", "assistant_id", "phone_number",
		count(*) AS "turns", count(*) FILTER (WHERE "interrupted") AS "interrupted_turns"
	FROM "keyed" GROUP BY 1, 2, 3, 4, 5
)
SELECT f."organization_id", f."hours", f."period_start", f."assistant_id", f."phone_number", f."turns", f."interrupted_turns",
	'{}'::int[],
	coalesce(p."end_to_end", '{}'::int[]), coalesce(p."llm_ttft", '{}'::int[]),
	coalesce(p."tts_ttfb", '{}'::int[]), coalesce(p."stt_delay", '{}'::int[]),
	coalesce(p."platform", '{}'::int[])
FROM "figures" f LEFT JOIN "pivot" p USING ("organization_id", "hours", "period_start", "assistant_id", "phone_number")
ON CONFLICT ("organization_id", "hours", "period_start", "assistant_id", "phone_number") DO UPDATE SET
	"turns" = excluded."turns", "interrupted_turns" = excluded."interrupted_turns",
	"end_to_end_ms_histogram" = excluded."end_to_end_ms_histogram", "llm_ttft_ms_histogram" = excluded."llm_ttft_ms_histogram",
	"tts_ttfb_ms_histogram" = excluded."tts_ttfb_ms_histogram", "stt_delay_ms_histogram" = excluded."stt_delay_ms_histogram",
	"platform_ms_histogram" = excluded."platform_ms_histogram";
--> statement-breakpoint
INSERT INTO "call_rollups" ("organization_id", "hours", "period_start", "assistant_id", "phone_number", "transfers", "duration_seconds_histogram", "end_to_end_ms_histogram", "llm_ttft_ms_histogram", "tts_ttfb_ms_histogram", "stt_delay_ms_histogram", "platform_ms_histogram")
SELECT c."organization_id", s."hours",
	date_trunc(CASE WHEN s."hours" = 1 THEN 'hour' ELSE 'day' END, c."created_at" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
	coalesce(c."assistant_id", 0), c."from_phone_number", count(*),
	'{}'::int[], '{}'::int[], '{}'::int[], '{}'::int[], '{}'::int[], '{}'::int[]
FROM "call_events" e JOIN "calls" c ON c."id" = e."call_id" CROSS JOIN (VALUES (1::smallint), (24::smallint)) AS s("hours")
WHERE e."type" = 'call.transferred'
GROUP BY 1, 2, 3, 4, 5
ON CONFLICT ("organization_id", "hours", "period_start", "assistant_id", "phone_number") DO UPDATE SET "transfers" = excluded."transfers";
--> statement-breakpoint
INSERT INTO "call_tool_rollups" ("organization_id", "hours", "period_start", "assistant_id", "phone_number", "tool", "uses", "failures")
SELECT c."organization_id", s."hours",
	date_trunc(CASE WHEN s."hours" = 1 THEN 'hour' ELSE 'day' END, c."created_at" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
	coalesce(c."assistant_id", 0), c."from_phone_number", e."data"->>'name', count(*), count(*) FILTER (WHERE e."data"->'ok' = 'false'::jsonb)
FROM "call_events" e JOIN "calls" c ON c."id" = e."call_id" CROSS JOIN (VALUES (1::smallint), (24::smallint)) AS s("hours")
WHERE e."type" = 'call.tool' AND jsonb_typeof(e."data"->'name') = 'string'
GROUP BY 1, 2, 3, 4, 5, 6;
