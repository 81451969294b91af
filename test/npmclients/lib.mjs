// The JSON-lines protocol between a script here and its Go test (package test/nodeclient):
// emit prints one event per line on stdout; next reads the test's next command, one JSON value
// per line on stdin.
import { createInterface } from "node:readline";

export function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
}

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// next returns the test's next command (a parsed JSON value), or undefined when stdin closed.
export async function next() {
  const { value, done } = await lines.next();
  return done ? undefined : JSON.parse(value);
}

// fail reports err as an "error" event and exits 1.
export function fail(err) {
  emit("error", { message: String(err && err.stack ? err.stack : err) });
  process.exit(1);
}

process.on("unhandledRejection", fail);
