// The Anthropic TypeScript SDK (pinned in tests/package.json, its tool runner speaks message threads) against the
// gateway: `runner` finishes a two-tool task with client.beta.messages.toolRunner, `parse` extracts an object with
// client.messages.parse and a JSON schema output format. Prints what it got as JSON.
import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { jsonSchemaOutputFormat } from "@anthropic-ai/sdk/helpers/json-schema";

const client = new Anthropic({ baseURL: process.env.GATEWAY_URL, apiKey: "unused", maxRetries: 0 });
const model = process.env.MODEL;
const ran = [];
if (process.argv[2] === "runner") {
  const getWeather = betaTool({
    name: "get_weather", description: "Get the current weather for a city.",
    inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    run: ({ city }) => { ran.push("get_weather"); return `Sunny, 22C in ${city}`; },
  });
  const convert = betaTool({
    name: "convert", description: "Convert an amount of USD into another currency.",
    inputSchema: {
      type: "object", properties: { amount: { type: "number" }, currency: { type: "string" } },
      required: ["amount", "currency"],
    },
    run: ({ amount, currency }) => { ran.push("convert"); return `${(amount * 0.92).toFixed(2)} ${currency}`; },
  });
  const runner = client.beta.messages.toolRunner({
    model, max_tokens: 1024, tools: [getWeather, convert],
    messages: [{ role: "user", content: "Weather in Paris, and 10 USD in EUR?" }],
  });
  const final = await runner.runUntilDone();
  const text = final.content.filter((block) => block.type === "text").map((block) => block.text).join("");
  console.log(JSON.stringify({ text, ran }));
} else {
  const message = await client.messages.parse({
    model, max_tokens: 1024,
    messages: [{ role: "user", content: "Ada Lovelace was 36. Extract name and age." }],
    output_config: { format: jsonSchemaOutputFormat({
      type: "object", properties: { name: { type: "string" }, age: { type: "integer" } }, required: ["name", "age"],
    }) },
  });
  console.log(JSON.stringify({ parsed: message.parsed_output }));
}
