"""``membench_gate/gate/justify.py``: the rule-8 text checks of a justification, named in one line
when one fails, and the reading of text they rest on (folding look-alikes, names not counting as
words, fuzzy mentions, near-copies)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membench_gate.gate import justify
from membench_gate.gate.justify import (
    MIN_CHARS,
    breach_subject,
    check_justification,
    fold,
    is_near_copy,
    mentions,
)

REASON = ("veto/files_known recall dropped because scn-02 now needs the files of the ledger "
          "decision, which the new ranking weighs less; accepted while we rework it")
KEYS = ["veto/files_known#scn-02", "veto/files_known:veto_recall_at_k"]


def test_a_specific_reason_naming_the_breaches_passes() -> None:
    assert check_justification(REASON, KEYS) == justify.JustificationCheck(True)


@pytest.mark.parametrize("text", [None, "", "  \n\t "])
def test_no_text_is_no_justification(text: str | None) -> None:
    assert check_justification(text, KEYS).failed == "no justification"


def test_too_few_characters_says_how_many() -> None:
    text = "veto/files_known fell: ranking changed"  # 38 characters
    assert check_justification(text, KEYS).failed == \
        f"too short: {len(text)} characters, need {MIN_CHARS}"


@pytest.mark.parametrize("text", [
    # Names of metrics, cells and items are not reasons; a lone letter is not a word.
    "veto/files_known veto_recall_at_k mrr stale_surfaced net_at_1 push/default fell a lot",
    # A word repeated counts once: five words, said three times.
    "the ranking weights moved today, the ranking weights moved today, the ranking weights "
    "moved today: veto/files_known",
])
def test_names_and_repeated_words_do_not_count_as_words(text: str) -> None:
    failed = check_justification(text, KEYS).failed or ""
    assert failed.startswith("too short: ") and \
        failed.endswith(" distinct words besides metric, cell and item names, need 6")


@pytest.mark.parametrize(("text", "failed"), [
    # Names, a number and one word: short of words, and said so — no stock phrase in it.
    ("tau 0.6 net_at_1 net_at_2 abstention/default",
     "too short: 1 distinct word besides metric, cell and item names, need 6"),
    ("abstention/default net_at_1 net_at_2 net_at_5 net_at_10 veto/files_known mrr",
     "too short: 0 distinct words besides metric, cell and item names, need 6"),
    # A stock phrase padded with names and repeats is still a placeholder.
    ("update baseline update baseline abstention/default net_at_1 net_at_2",
     "reads like a placeholder, not a reason"),
    ("p2 update baseline update baseline abstention/default net_at_1 net_at_2",
     "reads like a placeholder, not a reason"),
])
def test_the_check_named_is_the_one_that_failed(text: str, failed: str) -> None:
    keys = ["abstention/default:net_at_1", "abstention/default:net_at_2"]
    assert check_justification(text, keys).failed == failed


def test_the_first_breach_not_named_is_said_and_how_many_more() -> None:
    keys = [*KEYS, "push/default:push_precision", "writeback/fidelity#c1"]
    assert check_justification(REASON, keys).failed == \
        "does not name 'push_precision' or its cell 'push/default' (and 1 more)"
    assert check_justification(REASON, [*KEYS, "push/default"]).failed == \
        "does not name the cell 'push/default'"


def test_an_item_id_with_a_colon_is_the_item_and_its_cell_is_before_the_hash() -> None:
    # LoCoMo's ids are ``<sample>:q<n>``: naming the cell covers the item, as for any other id.
    key = "recall/multi_hop#conv-26:q12"
    assert breach_subject(key) == ("recall/multi_hop", "conv-26:q12")
    assert breach_subject("veto/files_known:mrr") == ("veto/files_known", "mrr")
    assert breach_subject("veto:option:k") == ("veto", "option:k")
    reason = ("The multi hop questions of recall/multi_hop lost their second hop when the "
              "retriever's window was cut; accepted for the latency win.")
    assert check_justification(reason, [key]).ok
    assert check_justification(reason, ["recall/single_hop#conv-26:q12"]).failed == \
        "does not name 'conv-26:q12' or its cell 'recall/single_hop'"


def test_naming_the_cell_is_enough() -> None:
    assert check_justification(REASON, ["veto/files_known:mrr"]).ok


def test_a_near_copy_of_the_bases_justification_is_refused() -> None:
    outcome = check_justification(REASON, KEYS, base_text=REASON.replace("scn-02", "scn-07"))
    assert outcome.failed == "is a near-copy of the base baseline's justification"
    assert check_justification(REASON, KEYS, base_text="A different reason altogether: the "
                               "corpus was trimmed of stale pages by the docs team").ok


def test_a_near_copy_with_names_swapped_or_text_appended_is_still_one() -> None:
    names = justify._name_words(["veto/files_known:mrr", "push/default:push_precision"])
    base = "push/default precision fell because the new ranker prefers recent pages over old ones"
    assert is_near_copy(base.replace("push/default", "veto/files_known"), base, names)
    assert is_near_copy(base + ", and we will look at it again next quarter with the team", base,
                        names)
    assert not is_near_copy("the embedding model moved to a larger one, which hedges on dates",
                            base, names)


def test_look_alike_letters_fold_to_the_latin_they_imitate() -> None:
    assert fold("u\u0440date b\u0430seline") == "update baseline"  # Cyrillic р and а
    assert fold("\uff35\uff30\uff24\uff21\uff34\uff25") == "update"  # fullwidth, by NFKC
    assert fold("upd\u200bate\u0301") == "update"  # invisible and combining characters dropped


def test_a_placeholder_behind_look_alikes_is_still_one() -> None:
    text = "U\u0440date b\u0430seline for veto/files_known, u\u0440date b\u0430seline again"
    assert check_justification(text, KEYS).failed == "reads like a placeholder, not a reason"


DRAFTED = "{}. Accepted changes: veto/files_known, we moved the ledger files out of the index"


@pytest.mark.parametrize("draft", [
    "<write the reason here>", "<Write The Reason Here>", "[write the reason here]",
    "write   the reason\nhere", "(WRITE THE REASON HERE)", "<write teh reason here>",
    "<wrıte the reasøn here>", "<write the re\u0430son here>", "w\u200brite the reason here",
    # small capitals, e and r with a stroke, the e's of other names; a word put in, letters
    # doubled or spaces moved inside the brackets; a typo standing alone between stops
    "\u2039\u1d21\u0280\u026a\u1d1b\u1d07 \u1d1b\u029c\u1d07 \u0280\u1d07\u1d00\ua731\u1d0f\u0274 "
    "\u029c\u1d07\u0280\u1d07>",
    "\u2039writ\u0247 th\u0247 r\u0247ason h\u0247r\u0247>", "<w\u0280ite the \u0280eason he\u0280e>",
    "<writ\u03b5 th\u03b5 r\u03b5ason h\u03b5r\u03b5>", "<writ\u0454 th\u0454 r\u0454ason h\u0454r\u0454>",
    "<writ\u01dd th\u01dd r\u01ddason h\u01ddr\u01dd>", "<writ\u025b th\u025b r\u025bason h\u025br\u025b>",
    "<write the real reason here>", "<wriite thhe reasson heere>", "<wri te th e rea son her e>",
    "write teh reason here", "write teh reason hree",  # beside "Accepted changes:", the slot
])
def test_the_draft_bless_prints_is_a_placeholder_however_it_is_spelled(draft: str) -> None:
    # Issue seen: "<write the reason here>. Accepted changes: …" has 6 words and 40 characters,
    # so rule 8 passed it when it reached a baseline other than through bless.
    assert check_justification(DRAFTED.format(draft), KEYS).failed == \
        "reads like a placeholder, not a reason"
    assert justify.holds_draft(DRAFTED.format(draft))


def test_a_reason_written_in_place_of_the_draft_passes() -> None:
    assert check_justification(DRAFTED.format("The ledger index was rebuilt"), KEYS).ok
    assert not justify.holds_draft("we write down here the reason the ranking changed")


@pytest.mark.parametrize("draft", [
    # a second red team's: Cherokee, Lisu, Cyrillic te/en, schwa, Coptic, insular r
    "<WRITE THE R\u13ac\u13aaSON HER\u13ac>", "<WRITE THE R\ua4f0\ua4eeSON HER\ua4f0>",
    "<wri\u0442e \u0442\u043de reason \u043dere>", "<writ\u0259 th\u0259 r\u0259ason h\u0259r\u0259>",
    "<writ\u2c89 th\u2c89 r\u2c89as\u2c9fn h\u2c89r\u2c89>", "<w\ua783ite the \ua783eason he\ua783e>",
    # letters in squares, in parentheses, regional indicators
    "\U0001f166\U0001f161\U0001f158\U0001f163\U0001f154 \U0001f163\U0001f157\U0001f154 "
    "\U0001f161\U0001f154\U0001f150\U0001f162\U0001f15e\U0001f15d \U0001f157\U0001f154\U0001f161\U0001f154",
    "\u24b2\u24ad\u24a4\u24af\u24a0 \u24af\u24a3\u24a0 \u24ad\u24a0\u249c\u24ae\u24aa\u24a9 "
    "\u24a3\u24a0\u24ad\u24a0",
    # reversed behind a bidi override; blank letters; an unassigned character
    "\u202e<ereh nosaer eht etirw>\u202c", "w\u3164rite the r\u3164eason h\u3164ere",
    "wri\U000e0080te the rea\U000e0080son here",
    # punctuation inside words, arrowheads for brackets, digits for letters
    "<write the rea\u2019son here>", "w\u00b7r\u00b7i\u00b7t\u00b7e the reason here",
    "\u02c2wirte teh reason here\u02c3", "WRlTE THE REAS0N HERE", "<wr1te th3 reason h3re>",
    # what Markdown renders as the draft
    "&lt;&#119;rite the &#114;eason here&gt;", "&lt;wri<!---->te the rea<!---->son here&gt;",
    "&lt;wri*t*e the rea*s*on here&gt;", "\\<write the reason here\\>", "write_the_reason_here",
])
def test_the_draft_as_a_reader_sees_it_is_a_placeholder(draft: str) -> None:
    assert check_justification(DRAFTED.format(draft), KEYS).failed == \
        "reads like a placeholder, not a reason"


def test_a_justification_is_a_reason_not_a_log() -> None:
    text = REASON + " " + "the dedup pass merged one more pair of near-duplicate notes; " * 70
    assert check_justification(text, KEYS).failed == \
        f"too long: {len(' '.join(text.split()))} characters, at most 4000 (a reason, not a log)"


@pytest.mark.parametrize("text", [
    "veto/files_known fell because the agent now batches every edit before the first write. "
    "The reason here is latency: one flush per session instead of one per turn.",
    "The agent no longer confirms facts it is about to write; the reason here is that the "
    "confirmation step doubled latency, so veto/files_known fell.",
    "veto/files_known dropped: the writer keeps each decision's cause in a sidecar (it writes "
    "the reason there) which the search does not read.",
    "After the rewrite, the reason here for the lower veto/files_known recall is that dedup "
    "now merges near-duplicate decisions.",
    "Not quite the reason here: dedup merges near-duplicate decisions, so veto/files_known fell.",
    "Writes the reason here into each memory's provenance; veto/files_known fell because merged "
    "decisions lose their files.",
    "We write the reasons here, in provenance, so veto/files_known drops where merged decisions "
    "lose their files.",
    "We rewrite the reasoner here so entity links resolve first; veto/files_known fell on merges.",
])
def test_prose_with_words_like_the_drafts_is_a_reason(text: str) -> None:
    # Red-team finding: a fuzzy match over the whole text refused these.
    assert not justify.holds_draft(text)
    assert check_justification(text, KEYS).ok, check_justification(text, KEYS)


@pytest.mark.parametrize(("text", "seen"), [
    ("reas\u00f8n", "reason"), ("\u00e6on", "aeon"), ("stra\u00dfe", "strasse"),
    ("\u0142edger", "ledger"), ("\u00d8ST", "ost"), ("\u0280\u1d07\ua731\u1d1b", "rest"),
    ("\u0180\u0247d", "bed"), ("\u01dd\u025b\u03b5\u0454", "eeee"),
])
def test_latin_letters_nfkc_keeps_whole_fold_to_the_plain_ones(text: str, seen: str) -> None:
    assert fold(text) == seen


@pytest.mark.parametrize(("key", "subject"), [
    ("veto/files_known:mrr", ("veto/files_known", "mrr")),
    ("veto/files_known#scn-1", ("veto/files_known", "scn-1")),
    ("push/default", ("push/default", None)),
])
def test_breach_subject_is_the_cell_and_its_metric_or_item(key: str,
                                                           subject: tuple[str, str | None]) -> None:
    assert breach_subject(key) == subject


def test_mentions_are_fuzzy_but_not_loose() -> None:
    assert mentions("NET at 1 fell on the default cell", "net_at_1")
    assert mentions("veto files-known dropped", "veto/files_known")
    assert not mentions("coverage fell on the default cell", "net_at_1")


@pytest.mark.parametrize("text", [
    "recall_at_k on recall/default: moved e5 to v2 of bge, p95 40 ms",  # identifiers count
    "recall_at_k गिरा: नई मॉडल सूची टीम ने मानी, ठीक है",  # Hindi: every piece of the script counts
    "写入路径现在合并重复事实，因此 recall_at_k 在两个会话中下降了，这是预期的结果。",  # no spaces: pairs
    "重複した事実をまとめたので、recall/default の recall_at_k が二つの会話で下がった。",
    # A lowercase "todo" inside a sentence is prose, not a marker, and so are these.
    "recall/default fell: the todo list app's notes are now chunked by heading, as planned",
    "Todo list records now carry their due date, which lowers recall_at_k on recall/default",
    "Placeholder pages were removed from the corpus, so recall/default answers fewer questions",
    "The XXX-large embedding model replaced the small one; recall/default fell as it hedges",
])
def test_terse_and_non_latin_justifications_have_their_words(text: str) -> None:
    outcome = check_justification(text, ["recall/default:recall_at_k"])
    assert outcome.ok, outcome.failed


def test_a_run_of_han_characters_is_not_one_word_each() -> None:
    # Pairs, not characters: five characters repeated are still few words.
    short = check_justification("recall/default:recall_at_k 下降下降下降下降下降下降下降下降下降下降",
                                ["recall/default:recall_at_k"])
    assert short.failed and short.failed.startswith("too short: 1 distinct word"), short


def test_justification_naming_the_metric_fuzzily() -> None:
    assert check_justification(
        "NET at 1 fell on the abstention default cell after we raised tau to cut wrong answers",
        ["abstention/default:net_at_1"]).ok
    assert not check_justification(
        "Coverage fell after we raised tau to cut the number of wrong answers in production",
        ["abstention/default:net_at_1"]).ok


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127)) | st.text())
def test_the_ascii_shortcut_normalizes_as_the_unicode_path_does(text: str) -> None:
    # fold() and _norm() take a shortcut for ASCII text (a check may normalize 100,000 keys).
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFKC",
                                                                text.translate(justify._BY_NAME)))
    folded = "".join(c for c in folded if unicodedata.category(c) not in ("Mn", "Me", "Cf"))
    folded = folded.translate(justify._FOLD).casefold().translate(justify._FOLD)
    assert justify.fold(text) == folded
    assert justify._norm(text) == " ".join(
        "".join(c if c.isalnum() else " " for c in folded).split())
