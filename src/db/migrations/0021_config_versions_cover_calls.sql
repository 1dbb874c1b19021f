-- Hand-written: the configuration version (migration 0019) also covers everything a call's resolved
-- configuration reads (domains/runtime/resolve-config.ts, kept in memory at that version by
-- ConfigResolver.resolveCurrent): the organization's concurrency and SIP trunk settings, an
-- assistant's name, activity and model provider, a number's SMS rate, and the fallback keys.
DROP TRIGGER "organizations_sms_sending" ON "organizations";
--> statement-breakpoint
CREATE TRIGGER "organizations_sms_sending" AFTER UPDATE ON "organizations" FOR EACH ROW
	WHEN ((OLD."settings", OLD."concurrency_settings", OLD."sip_trunk_config")
		IS DISTINCT FROM (NEW."settings", NEW."concurrency_settings", NEW."sip_trunk_config"))
	EXECUTE FUNCTION "sms_sending_changed"('id');
--> statement-breakpoint
DROP TRIGGER "assistants_sms_sending" ON "assistants";
--> statement-breakpoint
CREATE TRIGGER "assistants_sms_sending" AFTER UPDATE ON "assistants" FOR EACH ROW
	WHEN ((OLD."name", OLD."is_active", OLD."llm_provider", OLD."config")
		IS DISTINCT FROM (NEW."name", NEW."is_active", NEW."llm_provider", NEW."config"))
	EXECUTE FUNCTION "sms_sending_changed"('organization_id');
--> statement-breakpoint
DROP TRIGGER "phone_numbers_sms_sending" ON "phone_numbers";
--> statement-breakpoint
-- Still not on sms_next_send_at, which every drained message moves.
CREATE TRIGGER "phone_numbers_sms_sending" AFTER UPDATE ON "phone_numbers" FOR EACH ROW
	WHEN ((OLD."organization_id", OLD."phone_number", OLD."provider", OLD."assistant_id", OLD."graph_id", OLD."sms_rate_per_second")
		IS DISTINCT FROM (NEW."organization_id", NEW."phone_number", NEW."provider", NEW."assistant_id", NEW."graph_id", NEW."sms_rate_per_second"))
	EXECUTE FUNCTION "sms_sending_changed"('organization_id');
--> statement-breakpoint
CREATE TRIGGER "fallback_keys_config_version" AFTER INSERT OR UPDATE OR DELETE ON "fallback_keys"
	FOR EACH ROW EXECUTE FUNCTION "sms_sending_changed"('organization_id');
