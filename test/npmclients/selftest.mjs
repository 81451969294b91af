// Loads each official client library and echoes the test's commands: nodeclient's own test.
import { emit, next } from "./lib.mjs";
import { DefaultChatTransport, readUIMessageStream, AbstractChat } from "ai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { A2AClient } from "@a2a-js/sdk/client";

const loaded = [DefaultChatTransport, readUIMessageStream, AbstractChat, Client, StreamableHTTPClientTransport, A2AClient].map((f) => typeof f);
emit("ready", { node: process.versions.node, loaded });
for (let c = await next(); c !== undefined; c = await next()) emit("echo", { value: c });
emit("bye");
