#!/usr/bin/env node
// Write fixtures/pi-recorded/branched.jsonl with pi's own SessionManager, the way the agent persists a
// session: a tool turn, then a branch back to the first prompt (SessionManager.branch) with another answer.
// Usage: node tests/pi_harness/record_session.mjs OUTDIR   (the file is named by pi; copy it over)
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const home = mkdtempSync(join(tmpdir(), "pirec-"));
process.env.HOME = home; process.env.PI_CODING_AGENT_DIR = join(home, ".pi", "agent");
const mod = await import(import.meta.resolve("@mariozechner/pi-coding-agent"));
const { SessionManager } = mod;
const sm = SessionManager.create("/home/u/proj", process.argv[2]);
const ts = Date.now();
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const u1 = sm.appendMessage({ role: "user", content: [{ type: "text", text: "Read a.txt." }], timestamp: ts });
sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "Reading." }, { type: "toolCall", id: "toolu_r1", name: "read", arguments: { path: "a.txt" } }],
  api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-6", usage, stopReason: "toolUse", timestamp: ts + 1 });
sm.appendMessage({ role: "toolResult", toolCallId: "toolu_r1", toolName: "read", content: [{ type: "text", text: "hello" }], isError: false, timestamp: ts + 2 });
sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "It says hello." }], api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-6", usage, stopReason: "stop", timestamp: ts + 3 });
sm.branch(u1);
sm.appendMessage({ role: "user", content: [{ type: "text", text: "Another way, then." }], timestamp: ts + 4 });
sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "Sure." }], api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-6", usage, stopReason: "stop", timestamp: ts + 5 });
console.error(sm.getSessionFile ? sm.getSessionFile() : "");
