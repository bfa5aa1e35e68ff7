/**
 * `npm run client:generate`: writes the types of the API's OpenAPI document for `@foya/client`
 * (packages/client/src/generated/openapi.ts) with openapi-typescript. `--out <file>` writes them
 * elsewhere (test/client/generated-types.test.ts compares a fresh copy with the checked-in one).
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";
import { buildOpenApiDocument } from "./openapi-document.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const clientTypesFile = path.join(repoRoot, "packages/client/src/generated/openapi.ts");

const header = `${COMMENT_HEADER.trimEnd()}
// Source: GET /openapi.json of the Foya API. Regenerate with \`npm run client:generate\`.

`;

/** The TypeScript source of the document's types: paths, operations and component schemas. */
export async function generateClientTypes(): Promise<string> {
  // openapi-typescript's types want its own OpenAPI3 shape; the document is the one the API serves.
  const document = (await buildOpenApiDocument()) as unknown as Parameters<typeof openapiTS>[0];
  // A field with a default stays optional: the document does not list it as required, and a request may leave it out.
  const ast = await openapiTS(document, { defaultNonNullable: false });
  return header + astToString(ast);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outIndex = process.argv.indexOf("--out");
  const target = outIndex > 0 && process.argv[outIndex + 1] ? path.resolve(process.argv[outIndex + 1]!) : clientTypesFile;
  await writeFile(target, await generateClientTypes());
  console.log(`wrote ${path.relative(process.cwd(), target)}`);
}
