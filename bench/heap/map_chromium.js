// Times a `btpack heap map` page in headless Chromium through the DevTools
// protocol: load until the first draw, then wheel zooms, a drag pan and
// hovers sent as real input events, each timed from the event to the next
// frame after the redraw; JS heap and a screenshot.
//
// usage: node --experimental-websocket bench/heap/map_chromium.js MAP.html OUT.png
// (Node 20: WebSocket needs the flag; Node 22 has it without.)
"use strict";
const {spawn} = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [html, png] = process.argv.slice(2);
if (!html || !png) {
  console.error("usage: node --experimental-websocket map_chromium.js MAP.html OUT.png");
  process.exit(2);
}
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "btpack-mapbench-"));
const browser = spawn("chromium", ["--headless=new", "--no-sandbox", "--disable-gpu",
  "--hide-scrollbars", "--no-first-run", "--disable-extensions", "--window-size=1200,800",
  "--remote-debugging-port=0", "--user-data-dir=" + profile, "about:blank"],
  {stdio: ["ignore", "ignore", "pipe"]});
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function devtoolsPort() {
  let err = "";
  browser.stderr.on("data", d => { err += d; });
  for (let i = 0; i < 300; i++) {
    const m = /DevTools listening on ws:\/\/[^:]+:(\d+)\//.exec(err);
    if (m) return m[1];
    await sleep(100);
  }
  throw new Error("chromium did not start: " + err.slice(-500));
}

async function main() {
  const port = await devtoolsPort();
  const targets = await (await fetch("http://127.0.0.1:" + port + "/json/list")).json();
  const ws = new WebSocket(targets.find(t => t.type === "page").webSocketDebuggerUrl);
  await new Promise((ok, bad) => { ws.onopen = ok; ws.onerror = bad; });
  let next = 1;
  const waiting = new Map();
  ws.onmessage = ev => {
    const m = JSON.parse(ev.data);
    if (m.id && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
  };
  const send = (method, params = {}) => new Promise((ok, bad) => {
    const id = next++;
    waiting.set(id, m => (m.error ? bad(new Error(method + ": " + m.error.message)) : ok(m.result)));
    ws.send(JSON.stringify({id, method, params}));
  });
  const evaluate = async expr => {
    const r = await send("Runtime.evaluate", {expression: expr, awaitPromise: true, returnByValue: true});
    if (r.exceptionDetails) throw new Error(expr + ": " + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  const frame = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))";
  await send("Page.enable");
  await send("Performance.enable");

  // Load: from navigation until the page's script has drawn (data-drawn).
  let t = Date.now();
  await send("Page.navigate", {url: "file://" + path.resolve(html)});
  let drawn = null;
  for (let i = 0; i < 6000 && !drawn; i++) {
    await sleep(20);
    try { drawn = await evaluate("document.body && document.body.getAttribute('data-drawn')"); }
    catch (e) { /* still navigating */ }
  }
  if (!drawn) throw new Error("the map did not draw within 120 s");
  const loadMs = Date.now() - t;
  const nav = await evaluate("(() => { const n = performance.getEntriesByType('navigation')[0];" +
    " return {dcl: n.domContentLoadedEventStart, resp: n.responseEnd}; })()");
  const firstDraw = await evaluate("document.body.getAttribute('data-draw-ms')");
  await evaluate(frame);
  // what waiting for two frames costs with nothing to redraw
  t = performance.now();
  await evaluate(frame);
  const out = {allocations: Number(drawn), load_ms: loadMs, dom_content_loaded_ms: nav.dcl,
               index_ms: Number(await evaluate("document.body.getAttribute('data-index-ms')")),
               first_draw_ms: Number(firstDraw), idle_frame_ms: performance.now() - t};

  // the page's own draw time, and whether it drew from the aggregate (A)
  // or the allocations in view (E); pages without data-draw-path: "-"
  const drawMs = () => evaluate("[Number(document.body.getAttribute('data-draw-ms')), " +
    "(document.body.getAttribute('data-draw-path') || '-')[0].toUpperCase()]");
  // wheel: 10 zoom-in steps of the time axis at the map's centre, each
  // timed until two frames later (the redraw runs in the first)
  const zoom = [];
  for (let k = 0; k < 10; k++) {
    t = performance.now();
    await send("Input.dispatchMouseEvent", {type: "mouseWheel", x: 600, y: 300, deltaX: 0, deltaY: -100});
    await evaluate(frame);
    zoom.push([performance.now() - t, ...await drawMs()]);
  }
  // drag: press, 5 moves of 40 px, release; the time per move
  const pan = [];
  await send("Input.dispatchMouseEvent", {type: "mousePressed", x: 600, y: 300, button: "left", clickCount: 1});
  for (let k = 1; k <= 5; k++) {
    t = performance.now();
    await send("Input.dispatchMouseEvent", {type: "mouseMoved", x: 600 - 40 * k, y: 300, button: "left", buttons: 1});
    await evaluate(frame);
    pan.push([performance.now() - t, ...await drawMs()]);
  }
  await send("Input.dispatchMouseEvent", {type: "mouseReleased", x: 400, y: 300, button: "left", clickCount: 1});
  // back to the whole history (double-click), then hovers over it: the
  // tooltip is found by hit()
  t = performance.now();
  await evaluate("(mapC.dispatchEvent(new MouseEvent('dblclick')), " + frame + ")");
  const resetMs = performance.now() - t, resetDraw = (await drawMs())[0];
  const hover = [];
  const box = await evaluate("(() => { const r = mapC.getBoundingClientRect();" +
    " return [r.left + ML, r.top, mapC.width - ML, mapC.height - MB]; })()");
  // points given as fractions of the plot: the top-left corner is empty in
  // most maps (a miss scans every allocation)
  for (const [fx, fy] of [[0.02, 0.02], [0.5, 0.5], [0.25, 0.3], [0.9, 0.1], [0.6, 0.8]]) {
    const x = Math.round(box[0] + fx * box[2]), y = Math.round(box[1] + fy * box[3]);
    t = performance.now();
    await send("Input.dispatchMouseEvent", {type: "mouseMoved", x, y});
    await evaluate(frame);
    const ms = performance.now() - t;
    const tip = await evaluate("tip.style.display === 'block' ? tip.textContent.split('\\n')[0] : ''");
    const hitMs = await evaluate("(() => { const r = mapC.getBoundingClientRect(), s = performance.now();" +
      " for (let k = 0; k < 20; k++) hit(" + x + " - r.left, " + y + " - r.top);" +
      " return (performance.now() - s) / 20; })()");
    hover.push([ms, hitMs, tip]);
  }
  // where a draw of the whole history goes: the usage chart alone, the rest
  // is the map
  const parts = await evaluate("(() => { let s = performance.now(); for (let k = 0; k < 5; k++) draw();" +
    " const all = (performance.now() - s) / 5; s = performance.now(); for (let k = 0; k < 5; k++) drawUse();" +
    " return [all, (performance.now() - s) / 5]; })()");
  const metrics = Object.fromEntries((await send("Performance.getMetrics")).metrics.map(m => [m.name, m.value]));
  // resident memory of the browser's processes (the renderer holds the page)
  const ps = require("child_process").execFileSync("ps", ["-e", "-o", "pid=,ppid=,rss=,args="]).toString();
  const procs = ps.trim().split("\n").map(l => l.trim().split(/\s+/)).map(f => ({pid: +f[0], ppid: +f[1], rss: +f[2], args: f.slice(3).join(" ")}));
  const ours = new Set([browser.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) if (!ours.has(p.pid) && ours.has(p.ppid)) { ours.add(p.pid); grew = true; }
  }
  const mine = procs.filter(p => ours.has(p.pid));
  const rssMb = ps => Math.round(ps.reduce((a, p) => a + p.rss, 0) / 1024);
  const shot = await send("Page.captureScreenshot", {format: "png"});
  fs.writeFileSync(png, Buffer.from(shot.data, "base64"));
  const r1 = a => a.map(v => typeof v === "number" ? Math.round(v * 10) / 10 : v);
  Object.assign(out, {zoom_ms_and_draw_ms: zoom.map(r1), pan_ms_and_draw_ms: pan.map(r1),
    reset_ms: Math.round(resetMs), reset_draw_ms: resetDraw,
    whole_draw_ms_and_use_chart_ms: r1(parts), hover_ms_hit_ms_tip: hover.map(r1),
    // typed arrays live outside the JS heap: the renderer's RSS counts them
    js_heap_used_mb: Math.round(metrics.JSHeapUsedSize / 1048576),
    js_heap_total_mb: Math.round(metrics.JSHeapTotalSize / 1048576),
    renderer_rss_mb: rssMb(mine.filter(p => p.args.includes("--type=renderer"))),
    all_chromium_rss_mb: rssMb(mine)});
  console.log(JSON.stringify(out));
}

main().then(() => 0, e => { console.error(String(e.stack || e)); return 1; }).then(async code => {
  const gone = new Promise(r => browser.once("exit", r));
  browser.kill();
  await gone;
  fs.rmSync(profile, {recursive: true, force: true, maxRetries: 5});
  process.exit(code);
});
