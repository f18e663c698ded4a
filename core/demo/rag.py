"""RAG demo ("Demo RAG", issue 23): 30 factual questions, each with 12 retrieved chunks whose
scores are rounded like an LLM reranker's (many ties), several chunks per document, the
relevant chunk ids, a concise reference and a generated answer.

The story it tells is the hybrid-RAG report's (seed 001): its answers are mostly right but
verbose, so answer F1 against concise references is near 0.05 for answers a judge rates
correct (a verbose answer of ~40 distinct tokens holding a one-word reference scores 2 / 41).
Beside them, so that the correlation and the evidence gaps have something to say:

- `CONCISE`: right and short (set F1 near 1);
- `WRONG_WITH_EVIDENCE`: the answer chunk was retrieved, the answer is wrong (found but missed);
- `MISSED`: the document holding the answer is not in the top 10 (retrieved at 11-12 or not at
  all); of those, `WRONG_WITHOUT_EVIDENCE` answer wrongly, the others rightly from the model's
  own knowledge (missed but right: unfaithful to the retrieved texts, correct);
- every other question: verbose and right, grounded in the retrieved chunks: `PADDED` ones state the
  reference's one fact wrapped in sentences that assert nothing (a judge rates them correct:
  answer_correctness 1, answer F1 ~0.04), the others add two more true facts from the chunks (Ragas's
  answer correctness counts a fact the reference lacks as a false positive: 0.5; faithfulness 1).

Each question's document ``doc-NN`` holds three chunks: ``#c0`` states the answer (grade 2 in
``relevant``), ``#c1`` and ``#c2`` say more about the subject (grade 1); the other chunks come
from the other questions' documents (grade 0). Scores come from a seeded generator
(`SEED`) and are rounded to one decimal, so ties cross the cutoff of 10 in several questions.
Every answer is whole sentences ending in a full stop (the recorded judge replies,
`core.demo.rag_judge`, split on them). Deterministic: the same set, bit for bit, every time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.rag.data import RagItem, RagQuestion, RagSet

NAME = "Demo RAG"
SEED = 20250123
N_RETRIEVED = 12
#: (question, reference, the sentence stating the answer, two more sentences about the subject)
FACTS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "Where is the Eiffel Tower?",
        "Paris",
        "The Eiffel Tower stands on the Champ de Mars in Paris, France.",
        "It was built as the entrance arch for the 1889 World's Fair.",
        "The wrought-iron lattice tower is about 330 metres tall.",
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Jane Austen",
        "Pride and Prejudice is a novel by the English writer Jane Austen.",
        "It was first published in 1813 by Thomas Egerton.",
        "The story follows Elizabeth Bennet and Fitzwilliam Darcy.",
    ),
    (
        "What is the chemical symbol for gold?",
        "Au",
        "The chemical symbol for gold is Au, from the Latin word aurum.",
        "Gold has the atomic number 79.",
        "It is a dense, soft and yellow metal that resists corrosion.",
    ),
    (
        "In what year did Apollo 11 land on the Moon?",
        "1969",
        "Apollo 11 landed on the Moon on 20 July 1969.",
        "Neil Armstrong and Buzz Aldrin walked on the lunar surface.",
        "Michael Collins stayed in lunar orbit aboard the command module Columbia.",
    ),
    (
        "What is the largest planet in the Solar System?",
        "Jupiter",
        "Jupiter is the largest planet in the Solar System.",
        "It is a gas giant made mostly of hydrogen and helium.",
        "Its Great Red Spot is a storm wider than the Earth.",
    ),
    (
        "Who painted the Mona Lisa?",
        "Leonardo da Vinci",
        "The Mona Lisa was painted by the Italian artist Leonardo da Vinci.",
        "He worked on the portrait from about 1503 onwards.",
        "The painting hangs in the Louvre museum in Paris.",
    ),
    (
        "At what temperature does water boil at sea level?",
        "100 degrees Celsius",
        "At sea level, pure water boils at 100 degrees Celsius.",
        "Boiling starts when the vapour pressure equals the surrounding air pressure.",
        "On high mountains the boiling point is noticeably lower.",
    ),
    (
        "What is the capital of Japan?",
        "Tokyo",
        "Tokyo is the capital of Japan and its largest city.",
        "It became the seat of the imperial government in 1868.",
        "The Greater Tokyo Area is home to about 37 million people.",
    ),
    (
        "Who developed the theory of general relativity?",
        "Albert Einstein",
        "The theory of general relativity was developed by Albert Einstein.",
        "He published the field equations in 1915.",
        "The theory describes gravity as the curvature of spacetime.",
    ),
    (
        "What is the longest river in South America?",
        "The Amazon River",
        "The Amazon River is the longest river in South America.",
        "It flows from the Andes mountains to the Atlantic Ocean.",
        "Its basin holds the largest tropical rainforest on Earth.",
    ),
    (
        "How many bones are in the adult human body?",
        "206",
        "An adult human skeleton has 206 bones.",
        "Babies are born with around 270 bones, some of which fuse later.",
        "The femur in the thigh is the longest bone.",
    ),
    (
        "Which element has the atomic number 1?",
        "Hydrogen",
        "Hydrogen is the element with the atomic number 1.",
        "It is the lightest and most abundant element in the universe.",
        "Stars shine by fusing hydrogen nuclei into helium.",
    ),
    (
        "Who led the first expedition to reach the South Pole?",
        "Roald Amundsen",
        "Roald Amundsen led the first expedition to reach the South Pole.",
        "His Norwegian team arrived there on 14 December 1911.",
        "Robert Falcon Scott and his party arrived about five weeks later.",
    ),
    (
        "What is the hardest natural mineral?",
        "Diamond",
        "Diamond is the hardest natural mineral.",
        "It is a form of pure carbon arranged in a rigid crystal lattice.",
        "It scores 10 on the Mohs scale of mineral hardness.",
    ),
    (
        "Which language has the most native speakers?",
        "Mandarin Chinese",
        "Mandarin Chinese has the most native speakers of any language.",
        "Close to a billion people speak it as their first language.",
        "Spanish ranks second by the number of native speakers.",
    ),
    (
        "Who composed the Ninth Symphony that ends with the Ode to Joy?",
        "Ludwig van Beethoven",
        "The Ninth Symphony was composed by Ludwig van Beethoven.",
        "It premiered in Vienna in May 1824.",
        "Its final movement sets the poem Ode to Joy by Friedrich Schiller.",
    ),
    (
        "What is the smallest prime number?",
        "2",
        "The smallest prime number is 2.",
        "It is also the only even prime number.",
        "A prime number has exactly two divisors, one and itself.",
    ),
    (
        "At what temperature does water freeze in Fahrenheit?",
        "32 degrees Fahrenheit",
        "Pure water freezes at 32 degrees Fahrenheit.",
        "That equals zero degrees on the Celsius scale.",
        "Sea water freezes at a slightly lower temperature because of its salt.",
    ),
    (
        "Which planet is known as the Red Planet?",
        "Mars",
        "Mars is known as the Red Planet.",
        "Iron oxide dust on its surface gives it a reddish colour.",
        "It has two small moons called Phobos and Deimos.",
    ),
    (
        "Who was granted the first patent for the telephone?",
        "Alexander Graham Bell",
        "Alexander Graham Bell was granted the first patent for the telephone.",
        "The patent was issued in March 1876.",
        "Elisha Gray filed a caveat for a similar design on the same day.",
    ),
    (
        "What is the currency of the United Kingdom?",
        "The pound sterling",
        "The currency of the United Kingdom is the pound sterling.",
        "It is the oldest currency still in continuous use.",
        "The Bank of England issues its banknotes.",
    ),
    (
        "How many continents are there?",
        "Seven",
        "Geographers usually count seven continents.",
        "They are Africa, Antarctica, Asia, Australia, Europe, North America and South America.",
        "Asia is the largest continent by area.",
    ),
    (
        "Which gas do plants absorb for photosynthesis?",
        "Carbon dioxide",
        "Plants absorb carbon dioxide for photosynthesis.",
        "They use sunlight to turn it and water into glucose.",
        "Oxygen is released as a by-product of the process.",
    ),
    (
        "Who wrote the play Romeo and Juliet?",
        "William Shakespeare",
        "Romeo and Juliet is a tragedy written by William Shakespeare.",
        "It was written around 1595.",
        "The play is set in the Italian city of Verona.",
    ),
    (
        "What is the tallest mountain above sea level?",
        "Mount Everest",
        "Mount Everest is the tallest mountain above sea level.",
        "Its summit is 8849 metres high.",
        "It lies on the border between Nepal and China.",
    ),
    (
        "How fast does light travel in a vacuum?",
        "299,792 kilometres per second",
        "Light travels through a vacuum at 299,792 kilometres per second.",
        "Nothing carrying information can move faster.",
        "Sunlight needs about eight minutes to reach the Earth.",
    ),
    (
        "Which organ pumps blood through the human body?",
        "The heart",
        "The heart pumps blood through the human body.",
        "It beats about 100,000 times a day.",
        "It has four chambers, two atria and two ventricles.",
    ),
    (
        "What is the largest ocean on Earth?",
        "The Pacific Ocean",
        "The Pacific Ocean is the largest ocean on Earth.",
        "It covers about a third of the surface of the planet.",
        "The Mariana Trench, its deepest point, lies in the western Pacific.",
    ),
    (
        "Who discovered penicillin?",
        "Alexander Fleming",
        "Penicillin was discovered by Alexander Fleming.",
        "He noticed a mould killing bacteria in his laboratory in 1928.",
        "It became the first widely used antibiotic.",
    ),
    (
        "What is the capital of Australia?",
        "Canberra",
        "Canberra is the capital of Australia.",
        "It was chosen as a compromise between Sydney and Melbourne.",
        "Parliament House opened there in 1988.",
    ),
)
#: questions (0-based) answered right and short
CONCISE: frozenset[int] = frozenset({2, 10, 16, 21})
#: questions whose answer chunk is retrieved in the top 10 but answered wrongly, with the answer
WRONG_WITH_EVIDENCE: dict[int, str] = {
    7: "The capital of Japan is Kyoto. Kyoto was the home of the imperial court for more than a thousand years.",
    13: "The hardest natural mineral is quartz. Quartz is found in many kinds of rock.",
    19: "Thomas Edison was granted the first patent for the telephone. He also invented the phonograph.",
}
#: verbose right answers holding the reference's fact and nothing else besides sentences that assert nothing
PADDED: frozenset[int] = frozenset({0, 3, 6, 9, 12, 15, 18, 22, 25, 27})
#: questions whose document is not in the top 10
MISSED: frozenset[int] = frozenset({4, 24, 28})
#: of `MISSED`, those answered wrongly, with the answer
WRONG_WITHOUT_EVIDENCE: dict[int, str] = {
    28: "Penicillin was discovered by Louis Pasteur. He is also known for pasteurisation.",
}
_OPENING = "Based on the retrieved passages, here is a complete answer."
#: what a `PADDED` answer says around its one fact: sentences that assert nothing about the question
_PADDING = (
    "Let me walk you through what the sources say, step by step, so that nothing important is left out and "
    "you can see exactly how the conclusion follows. Having looked carefully at each passage in turn, the "
    "conclusion that follows is clear and well supported."
)
_CLOSING = (
    "To sum up, every detail above is drawn directly from the sources that were found, which agree with one "
    "another on this point. I hope this thorough explanation fully answers your question and gives you useful "
    "extra context for further reading."
)


def _chunks(i: int) -> list[tuple[str, str]]:
    """(chunk id, text) of question ``i``'s document."""
    question, _, answer, more, most = FACTS[i]
    subject = question.rstrip("?")
    doc = f"doc-{i + 1:02d}"
    return [
        (f"{doc}#c0", f"{answer} {more}"),
        (f"{doc}#c1", most),
        (f"{doc}#c2", f"Background on the question {subject.lower()}: {more}"),
    ]


def _answer(i: int) -> str:
    _, reference, answer, more, most = FACTS[i]
    if i in CONCISE:
        return f"{reference}."
    if i in WRONG_WITH_EVIDENCE:
        return WRONG_WITH_EVIDENCE[i]
    if i in WRONG_WITHOUT_EVIDENCE:
        return WRONG_WITHOUT_EVIDENCE[i]
    if i in PADDED:
        return f"{_OPENING} {_PADDING} {answer} {_CLOSING}"
    return f"{_OPENING} {answer} {more} {most} {_CLOSING}"


def generate(seed: int = SEED) -> RagSet:
    """The demo set, deterministic for ``seed`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n = len(FACTS)
    questions = []
    for i in range(n):
        own = _chunks(i)
        others = [j for j in range(n) if j != i]
        picks = rng.choice(others, size=N_RETRIEVED, replace=False)
        distractors = [_chunks(int(j))[int(rng.integers(0, 3))] for j in picks]
        # scores like an LLM reranker's: one decimal, so equal values (ties) are common
        scores = np.sort(np.round(rng.uniform(0.2, 0.95, N_RETRIEVED), 1))[::-1]
        if i in MISSED:  # the document lands below the cutoff (or not at all)
            slots = [10, 11] if rng.random() < 0.5 else []
            placed = own[:2]
        else:  # the answer chunk in the top 4, the others somewhere in the top 12
            first = int(rng.integers(0, 4))
            rest = sorted(int(x) for x in rng.choice([p for p in range(N_RETRIEVED) if p != first], 2, replace=False))
            slots, placed = [first, *rest], own
        items: list[tuple[str, str]] = list(distractors)
        for slot, chunk in zip(slots, placed, strict=False):
            items[slot] = chunk
        retrieved = tuple(
            RagItem(cid, cid.split("#", 1)[0], float(score), text)
            for (cid, text), score in zip(items, scores, strict=True)
        )
        doc = f"doc-{i + 1:02d}"
        questions.append(
            RagQuestion(
                qid=f"rag{i + 1:02d}",
                question=FACTS[i][0],
                retrieved=retrieved,
                answer=_answer(i),
                references=(FACTS[i][1],),
                relevant={f"{doc}#c0": 2, f"{doc}#c1": 1, f"{doc}#c2": 1},
            )
        )
    return RagSet(NAME, tuple(questions), source="demo")


def load() -> list[tuple[str, str, Any]]:
    return [("rag", NAME, generate())]
