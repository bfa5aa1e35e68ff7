import { writeFile } from "node:fs/promises";
import path from "node:path";
import { runPeerScript } from "./langgraph-peer.js";

/**
 * The LangGraph peer's time to first model call: from `graph.invoke` to its model node's start
 * (the input checkpoint written first, durability sync), one thread at a time and `burst`
 * threads at once, in one process of the installed peer (langgraph-peer.ts). The shared peer
 * script measures whole loops only, so this one is written into the installed copy beside it.
 */
const script = `// Written by Foya's bench/support/langgraph-first-node.ts.
import { StateGraph, MessagesAnnotation, START, END } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { AIMessage } from '@langchain/core/messages';
const [singles = 20, burst = 50, bursts = 2] = process.argv.slice(2, 5).map(Number);
const entered = new Map();
const model = async (state, config) => {
  entered.set(config.configurable.thread_id, performance.now());
  return { messages: [new AIMessage('done')] };
};
const checkpointer = PostgresSaver.fromConnString(process.env.DATABASE_URL);
await checkpointer.setup();
const graph = new StateGraph(MessagesAnnotation).addNode('agent', model).addEdge(START, 'agent').addEdge('agent', END).compile({ checkpointer });
const run = process.pid + '-' + Date.now();
let n = 0;
const one = async () => {
  const thread = run + '-' + n++;
  const s = performance.now();
  await graph.invoke({ messages: [{ role: 'user', content: 'go' }] }, { configurable: { thread_id: thread }, durability: 'sync' });
  return entered.get(thread) - s;
};
for (let i = 0; i < 3; i++) await one();
const single = [];
for (let i = 0; i < singles; i++) single.push(await one());
const burstDelays = [];
for (let b = 0; b < bursts; b++) burstDelays.push(...(await Promise.all(Array.from({ length: burst }, one))));
console.log(JSON.stringify({ single, burst: burstDelays }));
process.exit(0);
`;

export interface PeerFirstNode {
  single: number[];
  burst: number[];
}

export async function runLangGraphFirstNode(
  dir: string,
  databaseUrl: string,
  counts: { singles: number; burst: number; bursts: number },
  timeoutMs: number,
): Promise<PeerFirstNode> {
  const file = path.join(dir, "foya-first-node.mjs");
  await writeFile(file, script);
  const args = [String(counts.singles), String(counts.burst), String(counts.bursts)];
  return runPeerScript<PeerFirstNode>(dir, databaseUrl, file, args, timeoutMs, "the LangGraph first-node measure");
}
