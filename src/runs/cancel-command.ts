import type { EventBus } from "../events/event-bus.js";
import type { CommandRow } from "../store/commands.js";
import type { Store } from "../store/store.js";

/**
 * Asks the owning worker to kill a running background command (SPEC B1, B3). A command whose
 * owner no longer renews its lease is recorded `lost` at once instead (B4).
 */
export async function requestCommandCancel(services: { store: Store; bus: EventBus }, command: CommandRow): Promise<void> {
  if (command.status !== "running") return;
  await services.store.commands.markLostCommands(command.id);
  await services.bus.publishCommandCancel(command.id);
}
