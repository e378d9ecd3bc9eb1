REVOKE USAGE ON SCHEMA flowforge FROM flowforge_webhook;
