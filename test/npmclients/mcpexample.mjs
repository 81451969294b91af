// The example of docs/mcp-server.md: node mcpexample.mjs <endpoint> <name>
// Lists the tools, calls hello and answers its question (an elicitation) with <name>.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [endpoint, name] = process.argv.slice(2);
const client = new Client({ name: "example", version: "1" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  console.log(`${request.params.message} -> ${name}`);
  return { action: "accept", content: { answer: name } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(endpoint)));
const { tools } = await client.listTools();
console.log("tools:", tools.map((t) => t.name).join(", "));
const result = await client.callTool({ name: "hello", arguments: { message: "hi" } });
console.log(result.content[0].text, `(${result._meta["kortyx/status"]})`);
await client.close();
