import { FoyaApiError, isFoyaApiError, type FoyaClient, type Session } from "@foya/client";
import { exitCodes } from "../exit-codes.js";
import type { Command, ConfigStore } from "./command.js";
import { choiceOption, stringOption } from "./option-values.js";

const approvalModes = ["auto", "manual", "full_access"] as const;

export const sessionNewCommand: Command = {
  name: "session new",
  summary: "Create a session (in a project of the CLI's own unless --project is given)",
  details: [
    'Without --project, the session goes to a project named "cli" that the CLI creates once and remembers.',
    "The new session becomes the default of `foya run`.",
  ],
  arguments: [],
  options: {
    project: { type: "string", valueName: "ID", description: "the project to create the session in" },
    mode: { type: "string", valueName: "MODE", description: "approval mode: auto (default), manual or full_access" },
  },
  async run(input) {
    const client = await input.client();
    const approvalMode = choiceOption(input, "mode", approvalModes);
    const body = approvalMode ? { approvalMode } : {};
    const project = stringOption(input, "project");
    const session = project
      ? await createSession(client, { projectId: project, ...body })
      : await createInCliProject(client, input.config, body);
    await input.config.update({ sessionId: session.id });

    if (input.output.json) input.output.document(session);
    else input.output.line(`${input.output.style.bold(session.id)} (project ${session.projectId}, approval mode ${session.approvalMode})`);
    return exitCodes.ok;
  },
};

async function createSession(client: FoyaClient, body: { projectId: string; approvalMode?: Session["approvalMode"] }): Promise<Session> {
  const created = await client.api.POST("/v1/sessions", { body });
  if (!created.data) throw FoyaApiError.fromBody(created.response, created.error);
  return created.data;
}

/** The API lists no projects, so the CLI's project is remembered by id; one gone (404) is made again. */
async function createInCliProject(
  client: FoyaClient,
  config: ConfigStore,
  body: { approvalMode?: Session["approvalMode"] },
): Promise<Session> {
  const remembered = (await config.read()).projectId;
  if (remembered) {
    try {
      return await createSession(client, { projectId: remembered, ...body });
    } catch (error) {
      if (!isFoyaApiError(error) || error.status !== 404) throw error;
    }
  }
  const project = await client.api.POST("/v1/projects", { body: { name: "cli" } });
  if (!project.data) throw FoyaApiError.fromBody(project.response, project.error);
  await config.update({ projectId: project.data.id });
  return createSession(client, { projectId: project.data.id, ...body });
}
