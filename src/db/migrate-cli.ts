import { loadConfig } from "../config.js";
import { openDatabase } from "./client.js";
import { runMigrations } from "./migrate.js";

const config = loadConfig();
const handle = openDatabase(config.databaseUrl, { max: 2 });
try {
  await runMigrations(handle);
  console.log("migrations applied");
} finally {
  await handle.close();
}
