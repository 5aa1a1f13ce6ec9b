// names.js: functions named every way V8 names them, each busy in turn, for the Node.js
// stacks test (the names scorch must show). Usage: node names.js SECONDS
'use strict';
const end = Date.now() + (Number(process.argv[2]) || 2) * 1000;

function spin(ms) {
  const t = Date.now();
  let x = 0;
  while (Date.now() - t < ms) x++;
  return x;
}

const handlers = {};
handlers.onRequest = function () { return spin(4); }; // inferred name: handlers.onRequest
class Shop {
  checkout() { return spin(4); } // a method
}
const arrowTask = () => spin(4); // an arrow function named by its binding
function declared() { return spin(4); } // a declaration

while (Date.now() < end) {
  handlers.onRequest();
  new Shop().checkout();
  arrowTask();
  declared();
  [0].forEach(function () { spin(4); }); // truly anonymous: LINE_ANON
}
