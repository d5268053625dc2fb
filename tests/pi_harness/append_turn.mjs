#!/usr/bin/env node
// Resume a session file with pi's own SessionManager (as `pi --session FILE` opens it), take one turn (a user
// message and an assistant reply appended the way the agent appends them), open the file again and print how many
// messages pi would send then: whether a resumed session keeps its history across a turn.
// Usage: node tests/pi_harness/append_turn.mjs FILE   (the file is changed: pass a copy)
// Prints {"before": N, "after": M, "lastParent": ...} on stdout.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
const home = mkdtempSync(join(tmpdir(), "piturn-"));
process.env.HOME = home; process.env.PI_CODING_AGENT_DIR = join(home, ".pi", "agent");
console.log = (...a) => console.error(...a);
const distDir = dirname(fileURLToPath(import.meta.resolve("@mariozechner/pi-coding-agent")));
const { SessionManager } = await import(pathToFileURL(join(distDir, "core", "session-manager.js")).href);
const file = process.argv[2];
const sm = SessionManager.open(file);
const before = sm.buildSessionContext().messages.length;
const ts = Date.now();
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
sm.appendMessage({ role: "user", content: [{ type: "text", text: "Next." }], timestamp: ts });
const last = sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "Done." }], api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-6", usage, stopReason: "stop", timestamp: ts + 1 });
const again = SessionManager.open(file);
process.stdout.write(JSON.stringify({ before, after: again.buildSessionContext().messages.length }) + "\n");
