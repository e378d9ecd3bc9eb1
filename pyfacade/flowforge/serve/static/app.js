// FlowForge UI: the only script. Auto-refresh (the page's data-refresh, in
// seconds, chosen with the picker) and submitting the picker on change.
// No inline script anywhere: the CSP allows script from /static only.
(function () {
  "use strict";
  var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  if (seconds > 0) {
    window.setTimeout(function () {
      if (document.visibilityState === "hidden") {
        document.addEventListener("visibilitychange", function () { window.location.reload(); }, { once: true });
      } else {
        window.location.reload();
      }
    }, seconds * 1000);
  }
  var selects = document.querySelectorAll("select[data-autosubmit]");
  for (var i = 0; i < selects.length; i++) {
    selects[i].addEventListener("change", function (event) { event.target.form.submit(); });
  }
})();
