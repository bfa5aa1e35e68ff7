import path from "node:path";
import { loadConfig } from "../config.js";
import { createLogger } from "../logger.js";
import { findServiceDir } from "../sandbox/service-dir.js";
import { isConnectionError, retryWhileUnavailable, urlSecrets } from "../startup/dependency-wait.js";
import { openDatabase } from "./client.js";
import { runMigrations } from "./migrate.js";

// The compose `migrate` one-shot: it waits for Postgres like the services do (SPEC D9), then
// applies the migrations once; a migration Postgres refuses exits 1.
const config = loadConfig();
const logger = createLogger(config.logging.level, { role: "migrate" });
const handle = openDatabase(config.database.url, { max: 2 });
try {
  await retryWhileUnavailable("postgres", () => runMigrations(handle, path.join(findServiceDir(), "drizzle")), {
    logger,
    retryIf: isConnectionError,
    secrets: urlSecrets(config.database.url),
  });
  console.log("migrations applied");
} finally {
  await handle.close();
}
