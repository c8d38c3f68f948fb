import { Hono } from "hono";
import { DevicePoll, DeviceStart, ROUTES } from "../../protocol/index.ts";
import type { AppEnv } from "../request-body.ts";
import { clientAddress, pollDevice, startDevice } from "../lib/device.ts";
import { valid } from "../validate.ts";

/** Public: a command line asks for a device code, then polls for what its approval yields (protocol/device.ts). */
export const device = new Hono<AppEnv>()
  .post(ROUTES.deviceAuthorize, valid("json", DeviceStart, { what: "device authorization request", empty: "refused" }), async (c) =>
    c.json(await startDevice(c.env, c.req.valid("json"), clientAddress(c.req.raw.headers), Date.now())),
  )
  .post(ROUTES.deviceToken, valid("json", DevicePoll, { what: "poll", empty: "refused" }), async (c) =>
    c.json(await pollDevice(c.env, c.req.valid("json").device_code, clientAddress(c.req.raw.headers), Date.now())),
  );
