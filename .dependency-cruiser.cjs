// Dependency rules of src/: dependencies point down. Run by `npm run check:deps`
// (part of `npm test`). Paths are relative to the repository root; type-only imports count.

/** Entry points: run by node or tsx, imported by nobody. */
const entries = [
  "^src/main\\.ts$",
  "^src/api/main\\.ts$",
  "^src/worker/main\\.ts$",
  "^src/db/migrate-cli\\.ts$",
  "^src/health/worker-healthcheck\\.ts$",
];

/**
 * Composition roots: they build or take the whole `Services`; every other module takes the parts it uses.
 * In src/worker only the entry and the runtime: jobs, their phases and the sweeper declare what they use
 * (src/worker/job-deps.ts), which `Services` satisfies.
 */
const compositionRoots = "^src/(services|process|main)\\.ts$|^src/api/|^src/worker/(main|worker-runtime)\\.ts$";

/**
 * Modules outside src/store that query Postgres themselves (drizzle's builders on the
 * schema's tables, or pg). Frozen list: a new module may not join it
 * (docs/decisions/0005-the-store-is-the-door-to-sql.md).
 * The one left opens its own connection on purpose: the start-up probe (`select 1`), before
 * any store exists. (A worker's liveness record, which a busy shared pool must not starve,
 * opens a store of its own: src/store/open-store.ts.)
 */
const queriesOutsideStore = ["src/startup/dependency-wait.ts"];
const exactPath = (path) => path.replace(/[.]/g, "\\.");

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-folder-cycles",
      severity: "error",
      comment: "Folders of src/ import each other in one direction only: move the shared piece down, or pass it in through an interface.",
      scope: "folder",
      from: { path: "^src/[^/]+" },
      to: { circular: true },
    },
    {
      name: "core-imports-nothing-of-ours",
      severity: "error",
      comment: "src/core holds the domain's types and pure rules; it imports only node and npm packages.",
      from: { path: "^src/core/" },
      to: { path: "^src/", pathNot: "^src/core/" },
    },
    {
      name: "db-imports-only-core",
      severity: "error",
      comment:
        "src/db (schema, client, migrations) imports only src/core. migrate-cli.ts is the migrate one-shot's entry point, a composition root whose path the deployments run (docker-compose.yml, docs/operations.md).",
      from: { path: "^src/db/", pathNot: "^src/db/migrate-cli\\.ts$" },
      to: { path: "^src/", pathNot: "^src/(core|db)/" },
    },
    {
      name: "low-top-level-files-import-only-core",
      severity: "error",
      comment:
        "config.ts, errors.ts, ids.ts, logger.ts and failpoints.ts are used everywhere, so they import only src/core (the folder rule cannot see top-level files: they are all one folder, src).",
      from: { path: "^src/(config|errors|ids|logger|failpoints)\\.ts$" },
      to: { path: "^src/", pathNot: "^src/core/|^src/(config|errors|ids|logger|failpoints)\\.ts$" },
    },
    {
      name: "api-never-worker",
      severity: "error",
      comment: "The API process runs no worker code (SPEC E4): nothing in src/api imports src/worker, directly or through other modules.",
      from: { path: "^src/api/" },
      to: { path: "^src/worker/", reachable: true },
    },
    {
      name: "services-only-in-composition-roots",
      severity: "error",
      comment:
        "Only composition roots (src/services.ts, process.ts, main.ts, src/api, src/worker/main.ts and worker-runtime.ts) import src/services.ts; lower modules declare the small dependency interface they use (UnitOfWorkDeps, DecideDeps, GateDeps, WebhookDeps, ...).",
      from: { path: "^src/", pathNot: compositionRoots },
      to: { path: "^src/services\\.ts$" },
    },
    {
      name: "only-the-store-queries",
      severity: "error",
      comment:
        "SQL is written by src/store (src/db: the schema, the client and migrations). Other modules call the store; the modules in queriesOutsideStore (.dependency-cruiser.cjs) are the frozen list of those not moved yet.",
      from: { path: "^src/", pathNot: ["^src/(store|db)/", ...queriesOutsideStore.map((path) => `^${exactPath(path)}$`)] },
      to: { path: "^node_modules/(drizzle-orm|pg)/" },
    },
    {
      name: "only-the-store-uses-tables",
      severity: "error",
      comment:
        "A module that imports the schema's tables as values builds queries with them (db.select().from(table)...): that is the store's work. Type-only imports (row types) are fine. The same frozen list as only-the-store-queries.",
      from: { path: "^src/", pathNot: ["^src/(store|db)/", ...queriesOutsideStore.map((path) => `^${exactPath(path)}$`)] },
      to: { path: "^src/db/schema\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "store-imports-only-what-is-below-it",
      severity: "error",
      comment:
        "src/store writes rows and answers what it appended; publishing events, enqueuing jobs, broadcasting cancels and counting after commit belong to src/unit-of-work, above it. The store imports only src/core, src/db, ids.ts and the provider contract's types (decision 0005).",
      from: { path: "^src/store/" },
      to: { path: "^src/", pathNot: "^src/(store|core|db)/|^src/ids\\.ts$|^src/providers/provider\\.ts$" },
    },
    {
      name: "no-raw-database-handles-outside-the-store",
      severity: "error",
      comment:
        "Callers hold the Store object (src/store/store.ts), never drizzle's Database, a DbExecutor, a pg Queryable or the pool: those types live in src/db/client.ts, src/store/sql-text.ts and src/store/repository.ts. The composition root opens its store with src/store/open-store.ts, which keeps the pool inside. No exception (decision 0005).",
      from: { path: "^src/", pathNot: "^src/(store|db)/" },
      to: { path: ["^src/db/client\\.ts$", "^src/store/(sql-text|repository|named-sql)\\.ts$"] },
    },
    {
      name: "no-orphans",
      severity: "error",
      comment: "A module of src/ that nothing imports is dead code, unless it is an entry point.",
      from: { orphan: true, path: "^src/", pathNot: [...entries, "\\.d\\.ts$"] },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|test|bench|scripts|packages)/" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    // The folder rule works on folder metrics.
    metrics: true,
    reporterOptions: { text: { highlightFocused: true } },
  },
};
