import { runProcess } from "../process.js";
import { startHttpServerEarly } from "./http-server.js";

await runProcess({ api: startHttpServerEarly });
