CREATE TABLE "sms_sending_versions" (
	"organization_id" integer PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Hand-written: the sending version's triggers (domains/sms/senders.ts). Every change to what a send
-- reads before it writes bumps the organization's version — whoever makes it — and tells every
-- process on the channel domains/sms/senders.ts listens to. TG_ARGV[0] names the row's organization column.
CREATE FUNCTION "sms_sending_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	changed_organization integer := ((CASE WHEN TG_OP = 'DELETE' THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END) ->> TG_ARGV[0])::integer;
BEGIN
	INSERT INTO "sms_sending_versions" AS v ("organization_id", "version") VALUES (changed_organization, 1)
	ON CONFLICT ("organization_id") DO UPDATE SET "version" = v."version" + 1;
	PERFORM pg_notify('switchboard_sms_sending_changed', changed_organization::text);
	RETURN NULL;
END $$;
--> statement-breakpoint
-- enforce_sms_compliance lives in settings
CREATE TRIGGER "organizations_sms_sending" AFTER UPDATE ON "organizations" FOR EACH ROW
	WHEN (OLD."settings" IS DISTINCT FROM NEW."settings") EXECUTE FUNCTION "sms_sending_changed"('id');
--> statement-breakpoint
CREATE TRIGGER "provider_credentials_sms_sending" AFTER INSERT OR UPDATE OR DELETE ON "provider_credentials"
	FOR EACH ROW EXECUTE FUNCTION "sms_sending_changed"('organization_id');
--> statement-breakpoint
-- An assistant's own carrier_a_config / carrier_b_config wins over the organization's credentials.
CREATE TRIGGER "assistants_sms_sending" AFTER UPDATE ON "assistants" FOR EACH ROW
	WHEN (OLD."config" IS DISTINCT FROM NEW."config") EXECUTE FUNCTION "sms_sending_changed"('organization_id');
--> statement-breakpoint
CREATE TRIGGER "assistants_sms_sending_removed" AFTER DELETE ON "assistants"
	FOR EACH ROW EXECUTE FUNCTION "sms_sending_changed"('organization_id');
--> statement-breakpoint
CREATE TRIGGER "phone_numbers_sms_sending_added" AFTER INSERT OR DELETE ON "phone_numbers"
	FOR EACH ROW EXECUTE FUNCTION "sms_sending_changed"('organization_id');
--> statement-breakpoint
-- Not on sms_next_send_at (every drained message moves it) nor on names and rates, which a send does not read.
CREATE TRIGGER "phone_numbers_sms_sending" AFTER UPDATE ON "phone_numbers" FOR EACH ROW
	WHEN ((OLD."organization_id", OLD."phone_number", OLD."provider", OLD."assistant_id", OLD."graph_id")
		IS DISTINCT FROM (NEW."organization_id", NEW."phone_number", NEW."provider", NEW."assistant_id", NEW."graph_id"))
	EXECUTE FUNCTION "sms_sending_changed"('organization_id');
--> statement-breakpoint
CREATE TRIGGER "sms_compliance_sms_sending" AFTER INSERT OR UPDATE OR DELETE ON "sms_compliance"
	FOR EACH ROW EXECUTE FUNCTION "sms_sending_changed"('organization_id');
