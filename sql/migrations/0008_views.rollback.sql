DROP VIEW flowforge.run_overview;
DROP VIEW flowforge.outbox_backlog;
