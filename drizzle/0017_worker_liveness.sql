CREATE TABLE "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"host" text NOT NULL,
	"pid" integer NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"stopped_at" timestamp with time zone,
	"stop_reason" text,
	"jobs" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"commands" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "on_interrupted" text DEFAULT 'end' NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "interruptions" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "on_interrupted" text DEFAULT 'end' NOT NULL;--> statement-breakpoint
CREATE INDEX "workers_live_idx" ON "workers" USING btree ("last_seen_at") WHERE stopped_at is null;