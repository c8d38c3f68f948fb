/** The console's one stylesheet (served at /console/style.css; the CSP allows no inline style). */
export const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #59636e; --bg: #fff; --line: #d1d9e0; --accent: #0b57d0; --bad: #b3261e; --warn: #8a5a00; --ok: #1a7f37; --soft: #f6f8fa; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --line: #30363d; --accent: #6ea8fe; --bad: #ff7b72; --warn: #d29922; --ok: #3fb950; --soft: #161b22; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; } .skip:focus { left: 1rem; top: .5rem; background: var(--bg); padding: .25rem .5rem; }
header { display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.25rem; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
header .brand { font-weight: 700; text-decoration: none; color: var(--fg); }
header nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; flex-wrap: wrap; }
header nav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
header .who { margin-left: auto; color: var(--muted); display: flex; gap: .75rem; align-items: center; }
main { padding: 1rem 1.25rem 3rem; max-width: 80rem; }
h1 { font-size: 1.4rem; margin: .3rem 0 1rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: .85rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem; }
pre { background: var(--soft); border: 1px solid var(--line); padding: .75rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.state { display: inline-block; padding: 0 .45rem; border-radius: 1rem; border: 1px solid currentColor; font-size: .8rem; white-space: nowrap; }
.state-healthy, .state-ended, .state-active { color: var(--ok); }
.state-pending, .state-live, .state-idle { color: var(--accent); }
.state-degraded, .state-closed, .state-paused, .state-suspended { color: var(--warn); }
.state-down, .state-crashed, .state-sealed, .state-unenrolled { color: var(--bad); }
.state-not_wrapped { color: var(--muted); }
.state-completed, .state-running { color: var(--ok); } .state-aborted, .state-unknown { color: var(--warn); }
.state-failed, .state-refused, .state-budget_exhausted { color: var(--bad); font-weight: 600; }
.small { font-size: .8rem; } .bad-text { color: var(--bad); }
tr.bad td, tr.bad th { background: color-mix(in srgb, var(--bad) 8%, transparent); }
details { margin: .25rem 0; } details > summary { cursor: pointer; }
.folded { border-left: 2px solid var(--line); padding-left: .6rem; } .folded p { margin: .2rem 0; word-break: break-all; }
.dup { color: var(--warn); font-weight: 600; }
fieldset.rows { border: 1px solid var(--line); border-radius: .4rem; margin: .6rem 0; padding: .4rem .8rem; }
fieldset.rows table td { vertical-align: top; } fieldset.rows input[type=text], fieldset.rows input:not([type]) { width: 100%; }
.state-within { color: var(--ok); } .state-exhausted { color: var(--bad); font-weight: 600; }
.state-ok { color: var(--ok); } .state-refused, .state-error, .state-lost, .state-definition_drift { color: var(--bad); } .state-cancelled, .state-reserved, .state-disabled { color: var(--warn); }
pre.diff .added { color: var(--ok); font-weight: 600; } pre.diff .removed { color: var(--bad); text-decoration: line-through; }
svg.chart { width: 100%; max-width: 45rem; height: auto; display: block; margin: .5rem 0; }
svg.chart .bar { fill: var(--accent); } svg.chart .axis { stroke: var(--line); }
svg.chart .label { fill: var(--muted); font-size: 12px; }
td.use { white-space: nowrap; } td.use meter { width: 8rem; vertical-align: middle; }
form.inline { display: inline; }
button, .button { font: inherit; padding: .3rem .8rem; border: 1px solid var(--line); border-radius: .4rem; background: var(--soft); color: var(--fg); cursor: pointer; text-decoration: none; display: inline-block; }
button.danger { border-color: var(--bad); color: var(--bad); }
label { display: block; font-weight: 600; margin: .6rem 0 .2rem; }
input, select, textarea { font: inherit; padding: .3rem .45rem; border: 1px solid var(--line); border-radius: .3rem; background: var(--bg); color: var(--fg); }
textarea { width: 100%; min-height: 12rem; font-family: ui-monospace, monospace; font-size: .85rem; }
.filters { display: flex; flex-wrap: wrap; gap: .75rem; align-items: end; }
.filters label { margin: 0; font-size: .85rem; }
.error { color: var(--bad); font-weight: 600; }
.field-error { color: var(--bad); margin: .2rem 0; }
.notice { border: 1px solid var(--line); border-left: 4px solid var(--accent); padding: .6rem .8rem; background: var(--soft); margin: .75rem 0; }
.notice.bad { border-left-color: var(--bad); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; } dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.actions { display: flex; gap: .6rem; flex-wrap: wrap; margin: .75rem 0; }
td .actions { margin: 0; flex-wrap: nowrap; gap: .4rem; }
ul.plain { padding-left: 1.1rem; }
`;
