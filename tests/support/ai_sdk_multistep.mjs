// The Vercel AI SDK's default OpenAI provider (`openai(model)`: the Responses API, `store` on) in a multi-step run
// with a tool; prints the answer and the Responses request bodies it sent, as JSON.
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";

const sent = [];
const openai = createOpenAI({
  baseURL: process.env.GATEWAY_URL,
  apiKey: process.env.GATEWAY_KEY,
  fetch: async (url, init) => {
    sent.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});
const lookup = tool({
  description: "Look up an order by its id.",
  inputSchema: jsonSchema({
    type: "object", properties: { id: { type: "string" } }, required: ["id"], additionalProperties: false,
  }),
  execute: async ({ id }) => `order ${id}: shipped`,
});
const result = await generateText({
  model: openai(process.env.MODEL),
  prompt: process.env.PROMPT,
  tools: { lookup_order: lookup },
  stopWhen: stepCountIs(4),
  maxRetries: 0,
});
console.log(JSON.stringify({ text: result.text, steps: result.steps.length, finishReason: result.finishReason, sent }));
