"""The episodes: eight kinds of common context waste in a small shop project, each followed by real work, and
one session of the same work with no waste at all (``no-waste``).

Every episode builds the same project (``app/`` with a cart, orders, pricing, config; ``tests/``), adds the
artefact its waste comes from (a big log, vendored code, a 5,000-test suite, ...), and is played by a
scripted model: the waste, then — only with mulligan, and only once a nudge reached the model — the mulligan
call the nudge suggests (rewind behind a note, or shrink to a summary), then the targeted step a careful agent
would have taken, then ordinary work as an agent does it (whole-file reads, greps, edits, test runs;
``WORK_TURNS`` turns by default, about 30 after the waste). The ``limit`` run skips the waste: the lean step
takes its place. All data is generated from fixed seeds.
"""

from __future__ import annotations

import json
import random
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.token_economy.runner import Call, Episode, Turn, bash, turn

# --------------------------------------------------------------------------------------------------
# The project every episode works in


def _module(name: str, functions: int, seed: int) -> str:
    rng = random.Random(seed)
    lines = [f'"""{name}: part of the shop backend."""', "", "from __future__ import annotations", ""]
    for i in range(functions):
        a, b = rng.randint(1, 9), rng.randint(10, 99)
        lines += [
            "",
            f"def {name}_step_{i:02d}(value: float, qty: int = {a}) -> float:",
            f'    """Apply rule {i} of {name}: scale by the quantity, then add the {name} fee."""',
            f"    subtotal = value * qty + {b} / 100",
            f"    if subtotal > {b * 10}:",
            f"        subtotal -= {a} * 0.5  # volume discount",
            "    return round(subtotal, 2)",
        ]
    return "\n".join(lines) + "\n"


CART = textwrap.dedent(
    '''\
    """The cart: lines, totals, rounding."""

    from __future__ import annotations

    from decimal import ROUND_HALF_UP, Decimal


    def line_total(price: float, qty: int) -> Decimal:
        return (Decimal(str(price)) * qty).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


    def total(lines: list[tuple[float, int]]) -> Decimal:
        return sum((line_total(p, q) for p, q in lines), Decimal("0"))


    def apply_coupon(amount: Decimal, percent: int) -> Decimal:
        # TODO: coupons above 50% need a manager override
        return (amount * (100 - percent) / 100).quantize(Decimal("0.01"))
    '''
)

TEST_CART = textwrap.dedent(
    """\
    import unittest
    from decimal import Decimal

    from app.cart import apply_coupon, line_total, total


    class CartTest(unittest.TestCase):
        def test_line_total(self):
            self.assertEqual(line_total(3.335, 3), Decimal("10.01"))

        def test_total(self):
            self.assertEqual(total([(1.5, 2), (2.25, 4)]), Decimal("12.00"))

        def test_coupon(self):
            self.assertEqual(apply_coupon(Decimal("10.00"), 15), Decimal("8.50"))


    if __name__ == "__main__":
        unittest.main()
    """
)

CONFIG = textwrap.dedent(
    '''\
    """Settings read at start-up."""

    import os


    def load_config() -> dict[str, str]:
        return {
            "db_url": os.environ.get("SHOP_DB", "sqlite:///shop.db"),
            "currency": os.environ.get("SHOP_CURRENCY", "EUR"),
            "log_level": os.environ.get("SHOP_LOG", "INFO"),
        }
    '''
)


def make_project(root: Path) -> None:
    (root / "app").mkdir()
    (root / "tests").mkdir()
    (root / "app" / "__init__.py").write_text("")
    (root / "tests" / "__init__.py").write_text("")
    (root / "app" / "cart.py").write_text(CART)
    (root / "app" / "config.py").write_text(CONFIG)
    for k, name in enumerate(("orders", "pricing", "shipping")):
        (root / "app" / f"{name}.py").write_text(_module(name, 14, seed=k))
    (root / "tests" / "test_cart.py").write_text(TEST_CART)
    (root / "README.md").write_text(
        "# shop\n\nA small shop backend. Run the tests with `python3 -m unittest`.\n"
    )


def work(prefix: str, n: int, focus: str) -> tuple[Turn, ...]:
    """``n`` turns of ordinary work on ``focus`` (an app module), as a coding agent does it: whole-file reads
    with the ``read`` tool (its default), greps, edits, test runs, short computations."""
    other = "shipping" if focus != "shipping" else "orders"
    steps: list[tuple[str, Call]] = [
        ("Reading the module.", Call("read", {"path": f"app/{focus}.py"}, "")),
        ("Listing its functions.", bash("", f"grep -n 'def ' app/{focus}.py")),
        ("Checking how the cart rounds.", Call("read", {"path": "app/cart.py"}, "")),
        ("Running the cart tests.", bash("", "python3 -m unittest -v tests.test_cart 2>&1 | tail -n 12")),
        ("Who calls the config?", bash("", "grep -rn 'load_config' app tests")),
        ("A module that works the same way.", Call("read", {"path": f"app/{other}.py"}, "")),
        ("Sizes of the modules.", bash("", "wc -l app/*.py")),
        (
            "Tightening the discount.",
            bash("", f"sed -i 's/volume discount/volume discount (capped)/' app/{focus}.py"),
        ),
        ("Checking the edit.", bash("", f"grep -n -B3 -A1 'capped' app/{focus}.py | head -n 40")),
        ("The tests, to extend them.", Call("read", {"path": "tests/test_cart.py"}, "")),
        (
            "A quick computation.",
            bash("", "python3 -c 'from app.cart import total; print(total([(19.99, 3), (5.5, 2)]))'"),
        ),
        ("Any TODOs left?", bash("", "grep -rn 'TODO' app")),
        ("Re-running every test.", bash("", "python3 -m unittest -v 2>&1 | tail -n 12")),
        ("The config module.", Call("read", {"path": "app/config.py"}, "")),
        (
            "Reading the module again after the edits.",
            Call("read", {"path": f"app/{focus}.py", "offset": 40}, ""),
        ),
    ]
    turns = []
    for i in range(n):
        thought, call = steps[i % len(steps)]
        turns.append(turn(thought, Call(call.tool, call.args, f"{prefix}{i + 1}")))
    return tuple(turns)


def rewind(call_id: str, what: str, state: str, nxt: str, granularity: str = "last_tool_call_group") -> Turn:
    note = {"what_happened": what, "true_current_state": state, "next": nxt}
    return turn("", Call("mulligan_rewind", {"note": note, "granularity": granularity}, call_id))


def shrink(call_id: str, target_id: str, summary: str, reason: str) -> Call:
    return Call(
        "mulligan_shrink",
        {"target": {"by_tool_call_id": target_id}, "replacement": summary, "reason": reason},
        call_id,
    )


def _with(extra: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        make_project(root)
        extra(root)

    return setup


# --------------------------------------------------------------------------------------------------
# The artefacts


def _server_log(root: Path) -> None:
    rng = random.Random(1)
    (root / "logs").mkdir()
    paths = ["/api/orders", "/api/cart", "/api/pricing", "/health", "/api/shipping/quote"]
    lines = []
    for i in range(6000):
        ts = f"2026-11-30T{8 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randint(0, 999):03d}Z"
        if i % 997 == 500:
            lines.append(
                f"{ts} ERROR worker-{rng.randint(1, 8)} pricing: Decimal rounding overflow in cart total"
            )
        else:
            lines.append(
                f"{ts} INFO  worker-{rng.randint(1, 8)} request id={rng.getrandbits(48):012x} "
                f"path={rng.choice(paths)} status=200 ms={rng.randint(2, 90)}"
            )
    (root / "logs" / "server.log").write_text("\n".join(lines) + "\n")


def _vendor(root: Path) -> None:
    rng = random.Random(2)
    for p in range(30):
        pkg = root / "vendor" / f"lib{p:02d}"
        pkg.mkdir(parents=True)
        for f in range(6):
            body = [f"# vendored lib{p:02d}/mod{f}.py"]
            for i in range(60):
                body.append(
                    f"    cfg_{i} = load_config(section='s{rng.randint(0, 99)}', strict={i % 2 == 0})"
                )
            (pkg / f"mod{f}.py").write_text("\n".join(body) + "\n")


def _suite(root: Path) -> None:
    script = textwrap.dedent(
        """\
        import sys

        for i in range(1, 5001):
            if i == 4242:
                print(f"test_case_{i:04d} (tests.test_pricing.PricingTest) ... FAIL")
            else:
                print(f"test_case_{i:04d} (tests.test_pricing.PricingTest) ... ok")
        print("=" * 70)
        print("FAIL: test_case_4242 (tests.test_pricing.PricingTest)")
        print("Traceback (most recent call last):")
        print('  File "tests/test_pricing.py", line 57, in test_case_4242')
        print("    self.assertEqual(total([(3.335, 3)]), Decimal('10.01'))")
        print("AssertionError: Decimal('10.00') != Decimal('10.01')")
        print("-" * 70)
        print("Ran 5000 tests in 12.408s")
        print("FAILED (failures=1)")
        sys.exit(1)
        """
    )
    (root / "tests" / "run_suite.py").write_text(script)


def _legacy(root: Path) -> None:
    (root / "legacy").mkdir()
    for k, name in enumerate(("billing_v1", "invoice_v1", "tax_v1", "ledger_v1", "export_v1", "report_v1")):
        (root / "legacy" / f"{name}.py").write_text(_module(name, 34, seed=10 + k))


def _orders_json(root: Path) -> None:
    rng = random.Random(3)
    orders = []
    for i in range(1, 301):
        items: list[dict[str, Any]] = [
            {
                "sku": f"SKU-{rng.randint(1000, 9999)}",
                "qty": rng.randint(1, 5),
                "price": rng.randint(100, 9999) / 100,
            }
            for _ in range(rng.randint(1, 4))
        ]
        orders.append(
            {
                "id": i,
                "customer": {"id": rng.randint(1, 500), "email": f"user{rng.randint(1, 500)}@example.com"},
                "items": items,
                "total": round(sum(x["qty"] * x["price"] for x in items), 2),
                "status": "failed" if i in (117, 245, 290) else rng.choice(["paid", "shipped", "delivered"]),
                "created": f"2026-11-{rng.randint(1, 30):02d}T{rng.randint(0, 23):02d}:00:00Z",
            }
        )
    (root / "api").mkdir()
    (root / "api" / "orders.json").write_text(json.dumps(orders, indent=2))


def _big_models(root: Path) -> None:
    (root / "app" / "models.py").write_text(_module("models", 110, seed=4))


def _build(root: Path) -> None:
    script = textwrap.dedent(
        """\
        import sys

        for i in range(1, 2401):
            print(f"[{i:4d}/2400] CC src/module_{i:04d}.c -o build/module_{i:04d}.o -O2 -Wall")
            if i % 300 == 0:
                print(f"src/module_{i:04d}.c:88:5: warning: unused variable 'tmp' [-Wunused-variable]")
        print("src/pricing_ext.c:142:17: error: 'ROUND_HALF_EVEN' undeclared (first use in this function)")
        print("make: *** [Makefile:31: build/pricing_ext.o] Error 1")
        sys.exit(2)
        """
    )
    (root / "build.py").write_text(script)


def _binary(root: Path) -> None:
    rng = random.Random(5)
    (root / "assets").mkdir()
    (root / "assets" / "firmware.bin").write_bytes(b"FWIMG\x01\x00\x02" + rng.randbytes(48_000))


# --------------------------------------------------------------------------------------------------
# The episodes


WORK_TURNS = 28
"""Turns of ordinary work after the waste (and the one or two turns that redo it properly): with those,
every episode continues about 30 turns, the top of the issue's 10–30 range."""


def episodes(work_turns: int = WORK_TURNS) -> list[Episode]:
    out: list[Episode] = []

    out.append(
        Episode(
            name="log-cat",
            waste_kind="whole-file `cat` of a large log",
            prompt="The pricing service logged errors overnight. Find them and harden the cart rounding.",
            setup=_with(_server_log),
            waste=(turn("Let me look at the log.", bash("w1", "cat logs/server.log")),),
            remedy=(
                rewind(
                    "m1",
                    "Dumped the whole 6,000-line server log; only the ERROR lines mattered.",
                    "logs/server.log is mostly INFO request lines; errors are rare.",
                    "grep the ERROR lines only.",
                ),
            ),
            after=(turn("Only the errors.", bash("a1", "grep -n ERROR logs/server.log | tail -n 20")),),
            lean=(turn("Only the errors.", bash("a1", "grep -n ERROR logs/server.log | tail -n 20")),),
            work=work("k", work_turns, "pricing"),
            answer="Six rounding overflows, all in the cart total; the rounding is now capped and tested.",
        )
    )

    out.append(
        Episode(
            name="grep-vendor",
            waste_kind="`grep -r` into vendored code",
            prompt="Where is load_config called in our code? I want to add a currency check.",
            setup=_with(_vendor),
            waste=(turn("Searching the tree.", bash("w1", "grep -rn load_config .")),),
            remedy=(
                rewind(
                    "m1",
                    "grep -r went into vendor/ (thousands of vendored hits); vendor/ is not our code.",
                    "Our code lives in app/ and tests/; vendor/ must be excluded from searches.",
                    "grep again with --exclude-dir=vendor.",
                ),
            ),
            after=(turn("Our code only.", bash("a1", "grep -rn load_config --exclude-dir=vendor .")),),
            lean=(turn("Our code only.", bash("a1", "grep -rn load_config --exclude-dir=vendor .")),),
            work=work("k", work_turns, "orders"),
            answer="load_config is defined in app/config.py and used nowhere else in app/; the check is added.",
        )
    )

    summary = (
        "tests/run_suite.py: 5,000 tests, 4,999 ok, 1 FAIL: test_case_4242 (tests/test_pricing.py:57) "
        "total([(3.335, 3)]) gave Decimal('10.00'), expected Decimal('10.01'). Exit 1."
    )
    out.append(
        Episode(
            name="test-run-5000",
            waste_kind="a 5,000-line failing test run",
            prompt="The test suite fails. Find the failing test and fix the cause.",
            setup=_with(_suite),
            waste=(turn("Running the suite.", bash("w1", "python3 tests/run_suite.py")),),
            remedy=(turn("", shrink("m1", "w1", summary, "only the one failure matters")),),
            after=(),
            lean=(
                turn(
                    "Running the suite, tail only.", bash("a1", "python3 tests/run_suite.py 2>&1 | tail -n 9")
                ),
            ),
            work=work("k", work_turns, "pricing"),
            answer="test_case_4242 failed on half-up rounding; line_total now rounds half-up and the suite passes.",
        )
    )

    explore = (
        turn(
            "The billing logic is probably in legacy/.",
            bash("w1", "cat legacy/billing_v1.py"),
            bash("w2", "cat legacy/invoice_v1.py"),
        ),
        turn(
            "Maybe tax and ledger.", bash("w3", "cat legacy/tax_v1.py"), bash("w4", "cat legacy/ledger_v1.py")
        ),
        turn(
            "Or the exporters.", bash("w5", "cat legacy/export_v1.py"), bash("w6", "cat legacy/report_v1.py")
        ),
    )
    out.append(
        Episode(
            name="wrong-direction",
            waste_kind="a wrong-direction exploration of several turns",
            prompt="Coupons above 50% should need a manager override. Implement it.",
            setup=_with(_legacy),
            waste=explore,
            # the drift nudge reaches the model with its third request: it compacts the first two dead ends
            # while it looks at the last candidates, then rewinds the whole exploration
            woven=(
                explore[1],
                turn(
                    explore[2].text,
                    shrink(
                        "s1", "w1", "legacy/billing_v1.py: dead v1 billing code; no coupon logic.", "dead end"
                    ),
                    shrink(
                        "s2", "w2", "legacy/invoice_v1.py: dead v1 invoice code; no coupon logic.", "dead end"
                    ),
                    *explore[2].calls,
                ),
            ),
            remedy=(
                rewind(
                    "m1",
                    "Read six legacy/ modules looking for coupon logic; legacy/ is dead code with no coupons.",
                    "Coupons live in app/cart.py (apply_coupon, with a TODO about the override).",
                    "Open app/cart.py and implement the override there.",
                    granularity="last_turn",
                ),
            ),
            after=(
                turn(
                    "The cart, where coupons live.", bash("a1", "grep -n -A3 'def apply_coupon' app/cart.py")
                ),
            ),
            lean=(
                turn(
                    "The cart, where coupons live.", bash("a1", "grep -n -A3 'def apply_coupon' app/cart.py")
                ),
            ),
            work=work("k", work_turns, "orders"),
            answer="apply_coupon now refuses more than 50% without manager=True; tests added.",
        )
    )

    json_summary = (
        "api/orders.json: a list of 300 orders {id, customer{id,email}, items[{sku,qty,price}], total, status, "
        "created}. status 'failed': ids 117, 245, 290; the rest paid/shipped/delivered."
    )
    out.append(
        Episode(
            name="json-response",
            waste_kind="a huge JSON API response",
            prompt="Which orders failed in the last export (api/orders.json)? Add a retry for them.",
            setup=_with(_orders_json),
            waste=(turn("Reading the API response.", bash("w1", "cat api/orders.json")),),
            remedy=(turn("", shrink("m1", "w1", json_summary, "only the schema and failed ids matter")),),
            after=(),
            lean=(
                turn(
                    "Only the failed ones.",
                    bash(
                        "a1",
                        "python3 -c \"import json; d=json.load(open('api/orders.json')); "
                        "print(len(d), sorted(d[0]), [o['id'] for o in d if o['status'] == 'failed'])\"",
                    ),
                ),
            ),
            work=work("k", work_turns, "orders"),
            answer="Orders 117, 245 and 290 failed; a retry queue for them is in app/orders.py.",
        )
    )

    reads = (
        turn("Reading the models.", Call("read", {"path": "app/models.py"}, "w1")),
        turn("Renaming rule 40.", bash("w2", "sed -i 's/models_step_40/models_rule_40/' app/models.py")),
        turn("Reading it again after the edit.", Call("read", {"path": "app/models.py"}, "w3")),
        turn("Renaming rule 41.", bash("w4", "sed -i 's/models_step_41/models_rule_41/' app/models.py")),
        turn("And once more.", Call("read", {"path": "app/models.py"}, "w5")),
    )
    superseded = "app/models.py as it was before a later edit; superseded by the latest read of the file."
    checked = (
        "app/models.py (110 rule functions models_step_NN, 7 lines each): models_rule_40 and models_rule_41 "
        "renamed and verified; no other definitions changed."
    )
    window = {"path": "app/models.py", "offset": 270, "limit": 30}
    out.append(
        Episode(
            name="repeated-reads",
            waste_kind="repeated reads of the same file",
            prompt="Rename rules 40 and 41 in app/models.py to models_rule_NN and check the file.",
            setup=_with(_big_models),
            waste=reads,
            # nudged after the first read, the model shrinks each read as soon as a later one supersedes it
            # (with the edit that supersedes it: the read's content is no longer needed once the edit is made)
            woven=(
                turn(
                    reads[1].text, shrink("m1", "w1", superseded, "superseded by this edit"), *reads[1].calls
                ),
                reads[2],
                turn(
                    reads[3].text, shrink("m2", "w3", superseded, "superseded by this edit"), *reads[3].calls
                ),
                reads[4],
            ),
            remedy=(
                turn("", shrink("m3", "w5", checked, "the edits are verified; only their outcome matters")),
            ),
            after=(),
            lean=(
                turn("Reading the rules to rename.", Call("read", window, "w1")),
                reads[1],
                turn("Checking the edit.", Call("read", window, "w3")),
                reads[3],
                turn("Checking the edit.", Call("read", window, "w5")),
            ),
            work=work("k", work_turns, "pricing"),
            answer="Rules 40 and 41 are renamed; nothing else referenced them.",
        )
    )

    out.append(
        Episode(
            name="build-log",
            waste_kind="a long build log",
            prompt="The build is broken. Fix it.",
            setup=_with(_build),
            waste=(turn("Building.", bash("w1", "python3 build.py")),),
            remedy=(
                rewind(
                    "m1",
                    "Ran the full build and read 2,400 lines of compile progress; only the error matters.",
                    "The build fails near the end; the log is progress lines and a few warnings.",
                    "Re-run the build and keep only the error lines.",
                ),
            ),
            after=(turn("Errors only.", bash("a1", "python3 build.py 2>&1 | grep -n -B1 -A1 'error'")),),
            lean=(turn("Errors only.", bash("a1", "python3 build.py 2>&1 | grep -n -B1 -A1 'error'")),),
            work=work("k", work_turns, "shipping"),
            answer="pricing_ext.c used ROUND_HALF_EVEN without the header; included it and the build passes.",
        )
    )

    out.append(
        Episode(
            name="binary-dump",
            waste_kind="a binary dump",
            prompt="What firmware version is assets/firmware.bin? The shipping module must check it.",
            setup=_with(_binary),
            waste=(turn("Looking at the file.", bash("w1", "cat assets/firmware.bin")),),
            remedy=(
                rewind(
                    "m1",
                    "cat of a binary file: 48 KB of unreadable bytes.",
                    "assets/firmware.bin is binary; its header holds the version.",
                    "Read the first bytes with od.",
                ),
            ),
            after=(
                turn(
                    "The header only.",
                    bash("a1", "head -c 16 assets/firmware.bin | od -An -c && wc -c assets/firmware.bin"),
                ),
            ),
            lean=(
                turn(
                    "The header only.",
                    bash("a1", "head -c 16 assets/firmware.bin | od -An -c && wc -c assets/firmware.bin"),
                ),
            ),
            work=work("k", work_turns, "shipping"),
            answer="The header says FWIMG v1.0.2; shipping now checks it.",
        )
    )
    out.append(
        Episode(
            name=NO_WASTE,
            waste_kind="none: ordinary work only, nothing to rewind",
            prompt="Cap the volume discount in app/pricing.py and keep the tests green.",
            setup=make_project,
            waste=(),
            remedy=(),
            after=(),
            lean=(),
            work=work("k", work_turns + 2, "pricing"),
            answer="The volume discount is capped; every test passes.",
        )
    )
    return out


NO_WASTE = "no-waste"
"""The episode without waste: what mulligan costs a session that never needs it."""


def episode(name: str) -> Episode:
    for ep in episodes():
        if ep.name == name:
            return ep
    raise KeyError(name)
