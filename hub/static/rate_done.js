// Mechanical Turk: hand the assignment back to MTurk as soon as the answers are saved.
document.getElementById("mturk-submit")?.submit();
