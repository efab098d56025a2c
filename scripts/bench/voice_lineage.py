#!/usr/bin/env python3
"""Writes a generated voice of up to 300 {prompt, completion} pairs, for measurements on lineages larger than
the bundled example. Deterministic: the same lines in the same order every time.

Two voices, each answering everyday questions in one recognisable form (the style is what an adapter learns;
the facts are plain):
  cook   - a cheerful ship's cook: "Ahoy from the galley! <tip>. <aside>. Fair winds!"
  clerk  - a dry records clerk:  "Noted. Matter: <subject>. Finding: <tip>. Filed under <section>. Regards."

Prompts are 60 subjects × 5 question forms, shuffled with a fixed seed, so the first N lines of a voice are a
sample of every kind of question, and no two prompts are the same.

usage: scripts/bench/voice_lineage.py VOICE N OUT_FILE
"""
import json
import random
import sys

SUBJECTS = [
    ("a dripping tap", "close the valve under the sink and change the washer", "plumbing"),
    ("a flat bicycle tyre", "find the hole in a bowl of water and patch it", "transport"),
    ("a sourdough starter", "feed it flour and water every day at the same hour", "kitchen"),
    ("a noisy fridge", "level its feet and clean the coils at the back", "appliances"),
    ("a slow laptop", "close the programs you do not need and free some disk space", "machines"),
    ("a sore back", "stand up every half hour and stretch gently", "health"),
    ("a wobbly table", "fold a piece of card under the short leg", "furniture"),
    ("a dead houseplant", "water it less and give it more light", "garden"),
    ("a job interview", "read about the company and prepare three questions", "work"),
    ("a rainy weekend", "plan one thing indoors and one short walk", "leisure"),
    ("a burnt pan", "soak it with baking soda and hot water overnight", "kitchen"),
    ("a forgotten password", "use the reset link and pick a long passphrase", "machines"),
    ("a long flight", "drink water, walk the aisle and sleep when the cabin is dark", "transport"),
    ("a squeaky door", "put a drop of oil on the hinges", "furniture"),
    ("a cold that will not go", "rest, drink warm fluids and see a doctor after ten days", "health"),
    ("a messy desk", "clear it fully once, then keep only today's work on it", "work"),
    ("a first camping trip", "pitch the tent at home once before you go", "leisure"),
    ("a blocked drain", "pour hot water, then use a plunger", "plumbing"),
    ("a late train", "check the next connection and tell whoever waits for you", "transport"),
    ("a birthday cake", "weigh everything and do not open the oven early", "kitchen"),
    ("a new puppy", "keep a routine for food, walks and sleep", "household"),
    ("a budget for the month", "write down fixed costs first, then set a limit for the rest", "money"),
    ("a garden full of weeds", "pull them after rain, when the roots come out whole", "garden"),
    ("a phone that will not charge", "try another cable and clean the port", "machines"),
    ("a difficult neighbour", "talk to them calmly and early, before it grows", "household"),
    ("a stain on a shirt", "rinse it in cold water before it sets", "household"),
    ("a fear of public speaking", "practise aloud three times and slow down", "work"),
    ("a move to a new flat", "label every box with its room", "household"),
    ("a stiff jar lid", "run the lid under hot water and grip it with a cloth", "kitchen"),
    ("a long essay", "outline it first and write one section a day", "work"),
    ("a car that will not start", "check the battery and the lights first", "transport"),
    ("a mouldy bathroom", "open the window after showers and scrub with vinegar", "household"),
    ("a sleepless night", "keep the room cool and put the screens away", "health"),
    ("a picnic in the park", "pack food that keeps without a fridge", "leisure"),
    ("a frozen pipe", "warm it slowly with a hair dryer, never a flame", "plumbing"),
    ("a new running habit", "start with short runs three times a week", "health"),
    ("a pile of unread email", "answer the short ones first and archive the rest", "work"),
    ("a leaking roof", "put a bucket under it and call a roofer", "household"),
    ("a child's school project", "help them plan it but let them do the work", "household"),
    ("a dinner party", "cook one dish you know well", "kitchen"),
    ("a flat battery in the remote", "swap the batteries and check the contacts", "appliances"),
    ("a tomato plant", "give it sun, support and steady water", "garden"),
    ("a rusty bike chain", "scrub it with a brush and oil every link", "transport"),
    ("a noisy office", "use earplugs and book a quiet room for hard work", "work"),
    ("a headache after screens", "rest your eyes every twenty minutes", "health"),
    ("a power cut", "keep a torch where you can find it in the dark", "household"),
    ("a slow wifi signal", "move the router higher and away from walls", "machines"),
    ("a weekend in the mountains", "check the weather and tell someone your route", "leisure"),
    ("a sticky drawer", "rub a candle along the runners", "furniture"),
    ("a fussy cat", "try one new food at a time", "household"),
    ("a bank card that was lost", "block it at once through the bank", "money"),
    ("a sunburn", "cool the skin and stay in the shade", "health"),
    ("a dull kitchen knife", "sharpen it on a stone at a steady angle", "kitchen"),
    ("a printer that jams", "remove the paper gently and fan the stack", "machines"),
    ("a cluttered wardrobe", "give away what you have not worn in a year", "household"),
    ("a trip abroad", "check your passport dates and carry copies", "transport"),
    ("a compost heap", "mix green and brown waste and turn it monthly", "garden"),
    ("a big exam", "sleep well the night before and eat breakfast", "work"),
    ("a lonely evening", "call a friend or take a walk", "leisure"),
    ("a cracked phone screen", "put tape over it and get it replaced", "machines"),
]

FORMS = [
    "How do I deal with {s}?",
    "What should I know about {s}?",
    "Any advice on {s}?",
    "What is the first thing to do about {s}?",
    "I have {s}. What now?",
]

COOK_ASIDES = [
    "That's how we do it below deck",
    "Even the captain agrees",
    "Simple as stirring the stew",
    "Learned that between two storms",
    "Trust the galley on this one",
]


def capitalised(text):
    return text[0].upper() + text[1:]


def answer(voice, subject, tip, section, form):
    if voice == "cook":
        return f"Ahoy from the galley! {capitalised(tip)}. {COOK_ASIDES[form]}. Fair winds!"
    if voice == "clerk":
        return f"Noted. Matter: {subject}. Finding: {tip}. Filed under {section}. Regards."
    raise SystemExit(f"voice_lineage.py: unknown voice {voice!r}; use cook or clerk")


def lines(voice, count):
    pairs = [(s, f) for s in range(len(SUBJECTS)) for f in range(len(FORMS))]
    random.Random(20261201).shuffle(pairs)
    if count > len(pairs):
        raise SystemExit(f"voice_lineage.py: at most {len(pairs)} lines, asked for {count}")
    for s, f in pairs[:count]:
        subject, tip, section = SUBJECTS[s]
        yield {"prompt": FORMS[f].format(s=subject), "completion": answer(voice, subject, tip, section, f)}


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    voice, count, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(out, "w") as f:
        for row in lines(voice, count):
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
