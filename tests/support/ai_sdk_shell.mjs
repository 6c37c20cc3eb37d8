// The Vercel AI SDK running a task with its own shell tool through the gateway: `generateText` (plain) or
// `streamText` (streamed), on the Responses API (`openai(model)`) or chat completions (`openai.chat(model)`).
// Prints the final text as JSON.
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";

const openai = createOpenAI({ baseURL: process.env.GATEWAY_URL, apiKey: "unused" });
const model = process.env.API === "chat" ? openai.chat(process.env.MODEL) : openai(process.env.MODEL);
const Bash = tool({
  description: "Run a shell command.",
  inputSchema: jsonSchema({ type: "object", properties: { command: { type: "string" } }, required: ["command"] }),
  execute: async ({ command }) => (command === "echo hi" ? "hi" : `unexpected: ${command}`),
});
const options = { model, prompt: process.env.PROMPT, tools: { Bash }, stopWhen: stepCountIs(4), maxRetries: 0 };
if (process.env.STREAM === "1") {
  const result = streamText(options);
  console.log(JSON.stringify({ text: await result.text }));
} else {
  const result = await generateText(options);
  console.log(JSON.stringify({ text: result.text }));
}
