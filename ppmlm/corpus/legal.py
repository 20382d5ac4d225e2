"""Deterministic synthetic legal documents: the second domain of the experiments.

A user is a case. Its documents (statements of facts, hearing minutes, procedural orders, judgments, and
docket sheets written in capitals) share legal language with every case of the same area of law, while
the case's own details (the parties' occupations, places, objects, events, companies, sums) recur across
that case's documents only: its indirect identifiers. Direct identifiers of every category carry gold
spans in `phi`; courts, law firms and companies are HOSPITAL, the category of organisations.

Built like the clinical corpus (`ppmlm.corpus.synth`, whose helpers it uses): each case is drawn from a
generator seeded with (seed, case index) only, so members and non-members come from one distribution and
adding cases never changes earlier ones; courts, judges and law firms shared by many cases come from the
seed alone. Records have the same fields: doc_id, user_id, text, label (area of law), phi.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Sequence

from faker import Faker

from ppmlm.corpus.synth import (
    _COLLECTIBLES,
    _EMAIL_DOMAINS,
    _PET_KINDS,
    _PET_NAMES,
    _US_STATES,
    Piece,
    _digits,
    _join,
    _NoteText,
    _occupation,
    _phone,
    _sentence,
    _slug,
    _span,
    _words,
)
from ppmlm.identifiers.labels import AGE, DATE, EMAIL, HOSPITAL, ID, LOCATION, NAME, PHONE, URL

CONTRACT = "contract"
PERSONAL_INJURY = "personal injury"
CRIMINAL = "criminal"
FAMILY = "family"
EMPLOYMENT = "employment"
CLASSES = (CONTRACT, PERSONAL_INJURY, CRIMINAL, FAMILY, EMPLOYMENT)

MIN_DOCUMENTS, MAX_DOCUMENTS = 3, 12
CAPS_DOCUMENT_SHARE = 1 / 3  # docket sheets and clerk's minutes, kept in capitals by many courts
SAME_AREA_SHARE = 0.75  # documents about the case's main area; the rest about a related claim
# Documents that also deal with an issue of another area, described as fully and placed after the
# principal one: only the order tells the label (as in the clinical corpus).
SECOND_ISSUE_SHARE = 0.3
FACT_SHARE = 0.5  # chance that a document repeats a given detail of the case: memorization needs repetition


@dataclass(frozen=True)
class _Area:
    """Vocabulary of one area of law, shared by every case whose document is about it."""

    claims: tuple[str, ...]
    allegations: tuple[str, ...]
    evidence: tuple[str, ...]
    arguments: tuple[str, ...]
    authorities: tuple[str, ...]
    relief: tuple[str, ...]
    holdings: tuple[str, ...]
    motions: tuple[str, ...]
    docket: tuple[str, ...]  # docket sheet entries, written in capitals


_AREAS = {
    CONTRACT: _Area(
        claims=_words(
            "breach of contract | breach of the implied covenant of good faith and fair dealing | "
            "unjust enrichment | promissory estoppel | account stated | breach of express warranty | "
            "fraudulent inducement | tortious interference with contract | anticipatory repudiation | "
            "quantum meruit | rescission for mutual mistake | a declaratory judgment on the indemnification clause"
        ),
        allegations=_words(
            "failed to deliver the goods by the agreed delivery date | refused to pay the outstanding invoices | "
            "terminated the agreement without the required sixty days of notice | delivered nonconforming goods | "
            "repudiated the supply agreement after the price of steel rose | misrepresented the condition of "
            "the equipment | failed to complete the work in a workmanlike manner | withheld the final milestone "
            "payment | breached the exclusivity provision | solicited customers in violation of the "
            "non-solicitation clause | failed to obtain the required building permits | stopped performance "
            "halfway through the project"
        ),
        evidence=_words(
            "the signed master services agreement | purchase orders and invoices | e-mail correspondence "
            "between the parties | the change orders | the bill of lading | the independent inspection report | "
            "the deposition of the project manager | the general ledger | the notice of termination | "
            "text messages about the delivery schedule | the letter of intent"
        ),
        arguments=_words(
            "the limitation of liability clause bars consequential damages | the parties never reached a "
            "meeting of the minds on price | the contract is ambiguous, so extrinsic evidence is admissible | "
            "the buyer waived strict compliance by accepting late deliveries | the claim is barred by the "
            "statute of frauds | the force majeure clause excused performance | the liquidated damages clause "
            "is an unenforceable penalty | the plaintiff failed to mitigate its damages | the merger clause bars "
            "evidence of prior negotiations | time was of the essence under the agreement"
        ),
        authorities=_words(
            "UCC section 2-207 | UCC section 2-725 | the parol evidence rule | Restatement (Second) of Contracts "
            "section 90 | the statute of frauds | the doctrine of substantial performance | the perfect tender "
            "rule | Hadley v. Baxendale"
        ),
        relief=_words(
            "compensatory damages | specific performance | rescission of the agreement | prejudgment interest "
            "at the statutory rate | reasonable attorney fees under the fee-shifting provision | restitution | "
            "a declaration that the non-compete clause is unenforceable | costs of suit"
        ),
        holdings=_words(
            "the agreement is a valid and enforceable contract | the defendant materially breached the "
            "agreement | the plaintiff substantially performed | genuine disputes of material fact preclude "
            "summary judgment | the limitation clause is enforceable between sophisticated parties | the lost "
            "profits claimed are too speculative to recover"
        ),
        motions=_words(
            "motion for summary judgment | motion to compel production of documents | motion to dismiss for "
            "failure to state a claim | motion for leave to amend the complaint | motion to strike the jury demand"
        ),
        docket=_words(
            "ANSWER AND COUNTERCLAIM FILED | MOT TO COMPEL PRODUCTION OF DOCUMENTS | MSJ FILED | OPP TO MSJ | "
            "STIP TO EXTEND DISCOVERY | NOTICE OF DEPOSITION OF CORPORATE REPRESENTATIVE | MEDIATION REPORT: "
            "IMPASSE | ORDER GRANTING MOT TO AMEND | WRIT OF ATTACHMENT ISSUED | BOND POSTED"
        ),
    ),
    PERSONAL_INJURY: _Area(
        claims=_words(
            "negligence | premises liability | products liability | medical malpractice | wrongful death | "
            "negligent entrustment | strict liability for a defective design | failure to warn | loss of "
            "consortium | negligent infliction of emotional distress | strict liability for a dog bite | "
            "assault and battery"
        ),
        allegations=_words(
            "ran a red light and struck the plaintiff's vehicle | failed to clear ice from the entrance | left "
            "a wet floor without a warning sign | sold a product with a defective locking mechanism | failed to "
            "diagnose the fracture | lost control of the delivery truck | allowed a dangerous dog to roam "
            "unleashed | failed to secure the scaffolding | served alcohol to a visibly intoxicated patron | "
            "rear-ended the plaintiff at a stop sign | failed to repair the stairway railing"
        ),
        evidence=_words(
            "the police accident report | dashcam video | photographs of the scene | the emergency room "
            "records | the testimony of the treating orthopedist | the accident reconstruction report | the "
            "maintenance logs | the recording of the 911 call | surveillance footage from a nearby store | the "
            "incident report prepared by the store manager"
        ),
        arguments=_words(
            "the defendant owed the plaintiff a duty of reasonable care | the hazard was open and obvious | the "
            "plaintiff was comparatively negligent | the injuries were not proximately caused by the collision | "
            "the product was misused | the defendant had constructive notice of the condition | the expert "
            "testimony is unreliable | the claim is barred by the statute of limitations | res ipsa loquitur "
            "applies | the plaintiff assumed the risk"
        ),
        authorities=_words(
            "Palsgraf v. Long Island Railroad | Restatement (Second) of Torts section 402A | the comparative "
            "fault statute | the Daubert standard | the collateral source rule | the eggshell plaintiff rule"
        ),
        relief=_words(
            "damages for past and future medical expenses | lost wages | damages for pain and suffering | "
            "punitive damages | damages for loss of consortium | costs and interest"
        ),
        holdings=_words(
            "the defendant breached its duty of care | a reasonable jury could find causation | the plaintiff "
            "was thirty percent at fault | the expert may testify on causation | the hazard was not open and "
            "obvious | the release signed by the plaintiff does not bar the claim"
        ),
        motions=_words(
            "motion in limine to exclude the expert testimony | motion for an independent medical examination | "
            "motion for summary judgment on causation | motion to compel the accident reconstruction file | "
            "motion for a new trial on damages"
        ),
        docket=_words(
            "COMPLAINT FOR DAMAGES FILED | IME REPORT SERVED | MOT IN LIMINE RE EXPERT | DAUBERT HEARING SET | "
            "JURY DEMAND FILED | ANSWER W/ AFFIRMATIVE DEFENSES | SUBPOENA DUCES TECUM ISSUED | PRETRIAL "
            "CONFERENCE HELD | MEDICAL RECORDS LIEN FILED | VERDICT FORM FILED"
        ),
    ),
    CRIMINAL: _Area(
        claims=_words(
            "burglary in the second degree | grand larceny | assault in the first degree | possession of a "
            "controlled substance with intent to distribute | driving while intoxicated | wire fraud | "
            "identity theft | robbery | arson | criminal mischief | money laundering | embezzlement | witness "
            "tampering | unlawful possession of a firearm"
        ),
        allegations=_words(
            "entered the warehouse after hours through a side window | used stolen credit card numbers to buy "
            "electronics | sold counterfeit pills to an undercover officer | set fire to a vacant storefront | "
            "diverted client funds into a personal account | struck the victim with a tire iron | drove with "
            "a blood alcohol content above the legal limit | forged checks drawn on the employer's account | "
            "threatened a witness by text message | fled from officers after a traffic stop"
        ),
        evidence=_words(
            "body camera footage | the search warrant return | cell site location records | fingerprints lifted "
            "from the window frame | the laboratory report on the seized substance | a recorded jail call | "
            "bank records obtained by subpoena | the testimony of the arresting officer | the breathalyzer "
            "printout | the defendant's post-arrest statement"
        ),
        arguments=_words(
            "the search exceeded the scope of the warrant | the statement was obtained without Miranda "
            "warnings | the identification procedure was unduly suggestive | the evidence is insufficient to "
            "prove intent | the chain of custody was broken | the stop lacked reasonable suspicion | the "
            "sentence is disproportionate | the prior conviction is inadmissible | the defendant acted in "
            "self-defense | the prosecution withheld exculpatory evidence"
        ),
        authorities=_words(
            "Miranda v. Arizona | the Fourth Amendment | Brady v. Maryland | the sentencing guidelines | "
            "Terry v. Ohio | the exclusionary rule | the Confrontation Clause"
        ),
        relief=_words(
            "a sentence of thirty-six months of imprisonment | five years of probation | restitution to the "
            "victim | a fine and court costs | suppression of the evidence | dismissal of the indictment | a new "
            "trial | two hundred hours of community service"
        ),
        holdings=_words(
            "the motion to suppress is denied | probable cause supported the warrant | the evidence was "
            "sufficient to sustain the conviction | the statement was voluntary | the plea was knowing and "
            "voluntary | the stop was supported by reasonable suspicion"
        ),
        motions=_words(
            "motion to suppress evidence | motion to dismiss the indictment | motion for a bill of particulars | "
            "motion for release on bail | motion to withdraw the guilty plea"
        ),
        docket=_words(
            "ARRAIGNMENT HELD, PLEA OF NOT GUILTY ENTERED | BAIL SET | MOT TO SUPPRESS FILED | DISCOVERY ORDER "
            "ENTERED | PLEA HEARING HELD | SENTENCING HELD | PSI ORDERED | BENCH WARRANT ISSUED | DEF REMANDED "
            "TO CUSTODY | GRAND JURY INDICTMENT RETURNED"
        ),
    ),
    FAMILY: _Area(
        claims=_words(
            "dissolution of marriage | child custody | child support | spousal maintenance | modification of "
            "parenting time | equitable distribution of marital property | a domestic violence protective order | "
            "relocation of the children | enforcement of the separation agreement | establishment of paternity | "
            "contempt for nonpayment of support | grandparent visitation"
        ),
        allegations=_words(
            "failed to pay child support for eleven months | moved the children out of state without consent | "
            "dissipated marital assets | concealed income from a side business | interfered with the other "
            "parent's parenting time | missed scheduled visits repeatedly | made threats during an exchange of "
            "the children | emptied the joint savings account | refused to sign the refinancing documents"
        ),
        evidence=_words(
            "the financial affidavits | tax returns for the last three years | the guardian ad litem report | "
            "school attendance records | the parenting coordinator's notes | text messages between the parties | "
            "the custody evaluation | bank statements | the home study"
        ),
        arguments=_words(
            "the best interests of the children favor joint legal custody | a substantial change in "
            "circumstances justifies modification | the separate property was commingled with marital funds | "
            "income should be imputed to the voluntarily underemployed parent | the relocation is sought in "
            "good faith | the premarital agreement is enforceable | maintenance should be rehabilitative and "
            "limited in time"
        ),
        authorities=_words(
            "the child support guidelines | the best interests standard | the Uniform Child Custody Jurisdiction "
            "and Enforcement Act | the equitable distribution statute | the domestic relations law"
        ),
        relief=_words(
            "sole legal custody | a parenting time schedule | child support under the guidelines | "
            "rehabilitative maintenance for four years | an equal division of the retirement accounts | "
            "exclusive use of the marital residence | a protective order for one year | attorney fees"
        ),
        holdings=_words(
            "joint legal custody is in the best interests of the children | income is imputed at the median "
            "wage | the residence is marital property | the support arrears are reduced to judgment | the "
            "relocation is permitted | the premarital agreement is valid"
        ),
        motions=_words(
            "motion for temporary orders | motion to modify child support | motion for contempt | motion to "
            "appoint a guardian ad litem | motion to relocate with the children"
        ),
        docket=_words(
            "PETITION FOR DISSOLUTION FILED | TEMPORARY ORDERS HEARING | GAL APPOINTED | FINANCIAL AFFIDAVIT "
            "FILED | MEDIATION ORDERED | PARENTING PLAN SUBMITTED | CONTEMPT HEARING SET | FINAL DECREE ENTERED | "
            "INCOME WITHHOLDING ORDER ISSUED | HOME STUDY ORDERED"
        ),
    ),
    EMPLOYMENT: _Area(
        claims=_words(
            "wrongful termination | retaliation under Title VII | age discrimination | disability "
            "discrimination and failure to accommodate | unpaid overtime under the Fair Labor Standards Act | "
            "breach of the non-compete agreement | sexual harassment and a hostile work environment | "
            "whistleblower retaliation | unpaid commissions | misclassification as an independent contractor | "
            "interference with medical leave"
        ),
        allegations=_words(
            "was fired two weeks after reporting safety violations | was denied a promotion in favor of a "
            "younger colleague | worked more than fifty hours a week without overtime pay | was refused a "
            "modified schedule after surgery | endured repeated demeaning comments by a supervisor | joined a "
            "competitor in breach of the non-compete | was terminated while on medical leave | had earned "
            "commissions withheld after resigning"
        ),
        evidence=_words(
            "the employee handbook | the performance reviews | timesheets and payroll records | the EEOC charge "
            "and right-to-sue letter | the termination letter | e-mails from the supervisor | the personnel "
            "file | the signed non-compete agreement | the testimony of coworkers | the human resources "
            "investigation report"
        ),
        arguments=_words(
            "the stated reason for the termination was pretextual | the employee was exempt from overtime | the "
            "non-compete is overbroad in duration and geography | the employer engaged in the interactive "
            "process in good faith | the comments were not severe or pervasive | the timing supports an "
            "inference of retaliation | the claims are subject to arbitration | the employee failed to exhaust "
            "administrative remedies"
        ),
        authorities=_words(
            "Title VII of the Civil Rights Act | the Age Discrimination in Employment Act | the Americans with "
            "Disabilities Act | the Fair Labor Standards Act | McDonnell Douglas Corp. v. Green | the Family "
            "and Medical Leave Act"
        ),
        relief=_words(
            "back pay | front pay | reinstatement | liquidated damages | unpaid overtime wages | an injunction "
            "enforcing the non-compete | compensatory damages for emotional distress | attorney fees and costs"
        ),
        holdings=_words(
            "the plaintiff established a prima facie case | the employer articulated a legitimate "
            "nondiscriminatory reason | a reasonable jury could find pretext | the non-compete is enforceable "
            "as narrowed | the arbitration agreement is valid | the plaintiff was a non-exempt employee"
        ),
        motions=_words(
            "motion to compel arbitration | motion for conditional certification of a collective action | "
            "motion for a preliminary injunction | motion for summary judgment | motion for a protective order"
        ),
        docket=_words(
            "RIGHT TO SUE LETTER ATTACHED | MOT TO COMPEL ARBITRATION | RULE 26(F) REPORT FILED | PROTECTIVE "
            "ORDER ENTERED | DEPO OF HR DIRECTOR NOTICED | MSJ HEARING SET | SETTLEMENT CONFERENCE HELD | "
            "CONSENT TO JOIN FILED | TRO DENIED | JOINT STATUS REPORT FILED"
        ),
    ),
}

_ROLES = {  # (the case's litigant, the other side)
    CONTRACT: ("plaintiff", "defendant"),
    PERSONAL_INJURY: ("plaintiff", "defendant"),
    CRIMINAL: ("defendant", "prosecution"),
    FAMILY: ("petitioner", "respondent"),
    EMPLOYMENT: ("plaintiff", "defendant"),
}
# Whose acts the allegations of an area describe: the litigant's (an employee's dismissal, a crime) or the other side's.
_LITIGANT_ACTS = frozenset((CRIMINAL, EMPLOYMENT))
_TITLES = {
    "statement": _words("COMPLAINT | VERIFIED PETITION | STATEMENT OF FACTS | AMENDED COMPLAINT | "
                        "AFFIDAVIT IN SUPPORT OF MOTION"),
    "minutes": _words("MINUTES OF HEARING | MINUTE ENTRY | HEARING MINUTES | MINUTES OF STATUS CONFERENCE"),
    "order": _words("SCHEDULING ORDER | CASE MANAGEMENT ORDER | ORDER ON MOTION | PROCEDURAL ORDER | "
                    "PRETRIAL ORDER"),
    "judgment": _words("MEMORANDUM OPINION AND ORDER | JUDGMENT | FINDINGS OF FACT AND CONCLUSIONS OF LAW | "
                       "DECISION AND ORDER | FINAL JUDGMENT"),
}
_DEADLINES = _words(
    "Initial disclosures shall be exchanged | Fact discovery shall be completed | Expert reports shall be "
    "served | Rebuttal expert reports shall be served | Dispositive motions shall be filed | Motions in "
    "limine shall be filed | The joint pretrial statement shall be filed | Amended pleadings shall be filed"
)
_HEARING_OPENINGS = _words(
    "The matter came on for hearing | The Court called the case | The hearing was held as scheduled | "
    "The parties appeared for the status conference | The Court convened the hearing"
)
_COURT_ACTIONS = _words(
    "The Court heard argument from both sides | The Court reviewed the written submissions | The Court "
    "questioned counsel on the timeline | Counsel presented their positions | The Court heard brief "
    "testimony and argument"
)
_OUTCOMES = _words(
    "The matter is taken under advisement | The motion is granted in part and denied in part | The motion "
    "is denied without prejudice | The motion is granted | The hearing is continued at the request of the "
    "parties | The parties are directed to submit proposed orders"
)
_STANDARDS = _words(
    "Summary judgment is appropriate where there is no genuine dispute as to any material fact | The "
    "moving party bears the initial burden | The Court views the evidence in the light most favorable to "
    "the nonmoving party | Credibility determinations are for the finder of fact | The burden of proof "
    "rests on the party asserting the claim | Findings of fact are made by a preponderance of the evidence"
)
_CLOSINGS = _words(
    "IT IS SO ORDERED | SO ORDERED | IT IS FURTHER ORDERED that each party shall bear its own costs | "
    "Judgment shall enter accordingly | The Clerk is directed to close the case"
)
_SERVICE = _words(
    "served on all counsel of record through the electronic filing system | served by first-class mail | "
    "served by e-mail by agreement of the parties | served by hand delivery"
)
_WITNESS_ROLES = _words(
    "a neighbor | a coworker | the property manager | an eyewitness | the bookkeeper | a former business "
    "partner | the site foreman | a family friend | the responding officer | an expert economist | a forensic "
    "accountant | the treating physician | a vocational expert | the night manager | a delivery driver"
)
_TIMES = ("8:30 AM", "9:00 AM", "9:30 AM", "10:00 AM", "10:30 AM", "11:00 AM", "1:30 PM", "2:00 PM", "3:00 PM")
_JURISDICTION = _words(
    "This Court has subject matter jurisdiction, and venue is proper because the events occurred in this "
    "county | Jurisdiction and venue are proper in this Court | The Court has personal jurisdiction over "
    "the parties, who transact business in this state | Venue lies in this district because a substantial "
    "part of the events giving rise to the claims occurred here"
)
_PROCEDURAL_HISTORY = _words(
    "The parties exchanged written discovery and took several depositions | The Court denied an earlier "
    "motion to dismiss | Mediation was unsuccessful | The parties filed cross-motions, which are fully "
    "briefed | The Court held an evidentiary hearing over two days | The parties stipulated to most of the "
    "underlying facts | A prior continuance was granted to allow additional discovery"
)
_PLEADING_PHRASES = _words(
    "All conditions precedent to this action have occurred or been performed | The {role} has suffered "
    "damages as a direct and proximate result of the conduct described above | The {role} reserves the right "
    "to amend this pleading as discovery proceeds | Each of the foregoing acts was willful and without "
    "justification | The {role} demands a trial by jury on all issues so triable | The {role} gave timely "
    "notice of the claims and an opportunity to cure"
)
_ORDER_RULES = _words(
    "Discovery disputes shall be raised by joint letter before any motion is filed | No extension will be "
    "granted without a showing of good cause | Counsel shall meet and confer in good faith before each "
    "deadline | Courtesy copies of dispositive motions shall be delivered to chambers | Failure to comply "
    "with this order may result in sanctions | Exhibits shall be exchanged seven days before the pretrial "
    "conference"
)
_COURT_REMARKS = _words(
    "The Court reminded the parties of their obligation to preserve evidence | The Court encouraged the "
    "parties to explore settlement | The Court noted that the briefing exceeded the page limits | The Court "
    "cautioned counsel about the tone of the correspondence | The Court will not entertain further "
    "requests for extension absent good cause | The Court directed counsel to file a joint status report"
)
_GENERAL_DOCKET = _words(
    "SUMMONS ISSUED | PROOF OF SERVICE FILED | NOTICE OF APPEARANCE FILED | CASE MANAGEMENT CONFERENCE HELD | "
    "STATUS CONFERENCE CONTINUED | MINUTE ORDER ENTERED | EXHIBIT LIST FILED | WITNESS LIST FILED | "
    "TRANSCRIPT ORDERED | SUBSTITUTION OF ATTORNEY FILED | NOTICE OF UNAVAILABILITY OF COUNSEL | "
    "STIPULATED PROTECTIVE ORDER | MOT TO CONTINUE GRANTED | ORDER TO SHOW CAUSE ISSUED"
)

# Indirect identifiers: large pools and composed phrases, so most belong to one case while some collide.
_OBJECT_FEATURES = _words(
    "hand-carved | solid brass | gold-plated | hand-painted | refurbished | custom-built | antique | "
    "walnut | cast-iron | stainless steel | mahogany | vintage | Venetian glass | limited-edition | "
    "salvaged oak | enamelled | wrought-iron | teak | copper | marble | bronze | titanium | porcelain | "
    "hand-stitched | lacquered | rosewood | ivory-inlaid | mother-of-pearl | carbon-fiber | Art Deco"
)
_OBJECTS = _words(
    "harpsichord | carousel horse | jukebox | grandfather clock | espresso machine | pipe organ | saddle | "
    "telescope | chandelier | sailboat | food truck | pizza oven | printing press | billiard table | tractor | "
    "carriage | church bell | cello | weather vane | pinball machine | taxidermy collection | wine press | "
    "beehive array | greenhouse | totem pole | slot machine | fire engine | mannequin set | loom | dentist "
    "chair | hot tub | bank vault door | ice resurfacer | popcorn machine | sawmill | wedding gown | kiln | "
    "hearse | motorcycle sidecar | steam locomotive model | stage curtain | tattoo machine | 3D printer | "
    "drone fleet | rowing shell | neon sign | player piano | ship figurehead | fountain | cider press"
)
_EVENTS = _words(
    "a burst water main | a warehouse fire | the collapse of a deck during a wedding reception | a runaway "
    "forklift | a hailstorm | a power outage at a cold storage facility | a gas leak | a stampede at a "
    "concert | a flood in a basement bowling alley | a sinkhole in a parking lot | a chemical spill | a "
    "roof collapse under heavy snow | a bounce house blown over by the wind | a carbon monoxide leak | a "
    "scaffolding collapse | a grease fire in a food truck | a boat capsizing on the lake | an escaped "
    "herd of goats | a crane failure | a fireworks accident | a ransomware attack | a break-in at a "
    "jewelry store | a burst pipe in a data center | a tree falling on a school bus | a bar fight after a "
    "darts tournament | a rodeo accident | a zip line failure | an elevator stuck between floors | a "
    "bakery oven explosion | a parade float fire"
)
_BRAND_STEMS = _words(
    "Zen | Vol | Kor | Tri | Max | Nova | Pyr | Quan | Rex | Sol | Tek | Ult | Vex | Wex | Xan | Yor | Zyl | "
    "Alt | Bry | Cor | Dyn | Elk | Fyr | Gal | Hex | Ion | Jub | Kel | Lux | Mor | Nex | Oxy | Pax | Qor"
)
_BRAND_ENDINGS = _words(
    "trova | tek | vance | lith | mark | dex | flow | line | gard | corp | nix | tron | wave | path | bolt | "
    "core | ster | quip | ora | ium | aro | ex | ify | yx"
)
_PRODUCTS = _words(
    "pressure cooker | e-bike battery | space heater | extension ladder | car seat | hoverboard | "
    "treadmill | power saw | hair dryer | baby monitor | lawn mower | tablet charger | garage door opener | "
    "infant swing | trampoline | scooter | dehumidifier | portable generator | deep fryer | standing desk"
)
_GOODS = _words(
    "industrial dough mixers | solar panels | ostrich eggs | hospital beds | wind turbine blades | "
    "organic hemp seed | ceramic tiles | refrigerated containers | tuxedo rentals | fireworks | "
    "roofing shingles | church pews | bowling pins | aquarium pumps | pallets of maple syrup | beehives | "
    "bulletproof vests | violin strings | prefabricated sheds | craft beer kegs | LED stadium lights | "
    "cashmere scarves | orthopedic mattresses | vending machines | cedar shakes | espresso beans"
)
_INJURIES = _words(
    "a fractured left tibia | a herniated disc at L4-L5 | a traumatic brain injury | a torn rotator cuff | "
    "second-degree burns to both hands | a shattered right wrist | a crushed foot | a ruptured spleen | "
    "a detached retina | facial lacerations requiring forty stitches | a broken pelvis | a torn ACL"
)
_VEHICLE_MAKES = _words(
    "Ford F-150 | Honda Civic | Toyota Camry | Chevrolet Silverado | Subaru Outback | Jeep Wrangler | "
    "Tesla Model 3 | Nissan Altima | Dodge Ram | Kia Soul | Volvo XC90 | Mazda Miata | Buick LeSabre"
)
_DEPARTMENTS = _words(
    "shipping | payroll | quality assurance | night sanitation | research | customer service | fleet | "
    "warehouse | compliance | marketing | foundry | pastry | claims | security | maintenance | billing"
)
_COLORS = _words("red | silver | black | white | blue | green | gold | maroon | gray | orange")
_CHILD_NAMES = _words(
    "Liam | Emma | Noah | Olivia | Ava | Elijah | Mia | Lucas | Harper | Mason | Aria | Ethan | Chloe | "
    "Logan | Zoe | Caleb | Nora | Owen | Lily | Wyatt | Hazel | Jack | Stella | Levi | Ruby | Isaac"
)
_COURT_KINDS = (  # (name, areas of law it hears)
    ("Superior Court of {county} County", CLASSES),
    ("Circuit Court of {county} County", CLASSES),
    ("{county} County District Court", CLASSES),
    ("Court of Common Pleas of {county} County", CLASSES),
    ("United States District Court for the District of {state}", (CONTRACT, PERSONAL_INJURY, CRIMINAL, EMPLOYMENT)),
    ("{town} Municipal Court", (CONTRACT, CRIMINAL)),
    ("{county} County Family Court", (FAMILY,)),
)
_DOCKET_FORMATS = (  # {yy}: two-digit year, {yyyy}: year, {c}: case type, {n}: digits
    "{yy}-{c}-{n5}", "{d}:{yy}-{cl}-{n5}", "{yyyy}/{n3}", "{c}{yy}-{n6}", "{c}{yy}-{n4}", "{n6}/{yyyy}",
)
_REPORTERS = _words("F.3d | F.4th | F. Supp. 3d | N.E.3d | P.3d | A.3d | S.W.3d | So. 3d | N.W.2d | Cal. Rptr. 3d")
_CASE_TYPES = {CONTRACT: "CV", PERSONAL_INJURY: "CV", CRIMINAL: "CR", FAMILY: "FA", EMPLOYMENT: "CV"}


@dataclass(frozen=True)
class _Person:
    first: str
    last: str
    male: bool

    @property
    def full(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def title(self) -> str:
        return "Mr." if self.male else "Ms."

    def mention(self, rng: random.Random, caps: bool) -> list[Piece]:
        """'John Smith', 'Mr. Smith', 'Smith'; in capitals 'SMITH' or 'J. SMITH'."""
        if caps:
            return [_span(rng.choice((self.last, f"{self.first[0]}. {self.last}")), NAME)]
        form = rng.randrange(3)
        if form == 0:
            return [_span(self.full, NAME)]
        return [f"{self.title} ", _span(self.last, NAME)] if form == 1 else [_span(self.last, NAME)]


@dataclass(frozen=True)
class _Firm:
    name: str
    practice: str  # "civil" (any party), "defense" (criminal defendants) or "prosecution"
    domain: str
    phone: str
    street: str
    city: str


@dataclass(frozen=True)
class _Lawyer:
    person: _Person
    firm: _Firm
    bar_number: str
    email: str

    def mention(self, rng: random.Random, caps: bool) -> list[Piece]:
        if caps:
            return ["ATTY ", _span(self.person.last, NAME)]
        form = rng.randrange(3)
        if form == 0:
            return [_span(self.person.full, NAME), ", Esq."]
        if form == 1:
            return [self.person.title + " ", _span(self.person.last, NAME)]
        return [_span(self.person.full, NAME), " of ", _span(self.firm.name, HOSPITAL)]

    def signature(self, rng: random.Random) -> list[Piece]:
        pieces: list[Piece] = [_span(self.person.full, NAME), " (Bar No. ", _span(self.bar_number, ID), ")\n",
                               _span(self.firm.name, HOSPITAL), "\n"]
        if rng.random() < 0.5:
            pieces += [_span(self.firm.street, LOCATION), ", ", _span(self.firm.city, LOCATION), "\n"]
        pieces += ["Tel. ", _span(self.firm.phone, PHONE), " | ", _span(self.email, EMAIL)]
        if rng.random() < 0.15:
            pieces += [" | ", _span(f"www.{self.firm.domain}", URL)]
        return pieces


@dataclass(frozen=True)
class _Court:
    name: str
    areas: tuple[str, ...]
    domain: str
    phone: str
    judges: tuple[_Person, ...]
    clerks: tuple[_Person, ...]
    reporters: tuple[_Person, ...]


@dataclass(frozen=True)
class _Bench:
    """Courts, judges and law firms shared by many cases; drawn from the corpus seed alone."""

    courts: tuple[_Court, ...]
    lawyers: tuple[_Lawyer, ...]
    mediators: tuple[_Person, ...]


def _person(fake: Faker, rng: random.Random) -> _Person:
    male = rng.random() < 0.5
    return _Person(fake.first_name_male() if male else fake.first_name_female(), fake.last_name(), male)


def _draw_bench(seed: int, fake: Faker) -> _Bench:
    rng = random.Random(f"ppmlm-legal-bench:{seed}")
    fake.seed_instance(f"ppmlm-legal-bench-faker:{seed}")
    courts = []
    for kind, areas in _COURT_KINDS:
        county, town = fake.last_name(), fake.city()
        name = kind.format(county=county, town=town, state=rng.choice(_US_STATES))
        people = [_person(fake, rng) for _ in range(7)]
        courts.append(_Court(name, areas, f"{_slug(county + town)[:12]}courts.gov", _phone(rng), tuple(people[:3]),
                             tuple(people[3:5]), tuple(people[5:])))
    surnames = [fake.last_name() for _ in range(11)]
    firms = (  # (name, practice, the distinctive part of its web domain)
        (f"{surnames[0]}, {surnames[1]} & {surnames[2]} LLP", "civil", surnames[0]),
        (f"{surnames[3]} Law Group", "civil", surnames[3]),
        (f"Law Offices of {fake.first_name()} {surnames[4]}", "civil", surnames[4]),
        (f"{surnames[5]} & {surnames[6]} PLLC", "civil", surnames[5]),
        (f"{surnames[7]} Legal Partners", "civil", surnames[7]),
        (f"Legal Aid Society of {fake.city()}", "civil", "legalaid"),
        (f"{surnames[8]} Employment Law", "civil", surnames[8]),
        (f"Office of the Public Defender of {surnames[9]} County", "defense", f"{surnames[9]}defender"),
        (f"{surnames[10]} County District Attorney's Office", "prosecution", f"{surnames[10]}da"),
    )
    lawyers = []
    for name, practice, key in firms:
        domain = _slug(key) + ("law.com" if practice == "civil" else ".gov")
        firm = _Firm(name, practice, domain, _phone(rng), fake.street_address(), fake.city())
        for _ in range(3):
            person = _person(fake, rng)
            email = f"{_slug(person.first)[0]}{_slug(person.last)}@{firm.domain}"
            lawyers.append(_Lawyer(person, firm, _digits(rng, 6), email))
    return _Bench(tuple(courts), tuple(lawyers), tuple(_person(fake, rng) for _ in range(4)))


@dataclass(frozen=True)
class _Case:
    """Everything drawn once per case; documents pick from it, so details recur across the documents."""

    user_id: str
    area: str
    docket: str
    court: _Court
    judge: _Person
    party: _Person  # the litigant the case is about (the defendant in a criminal case)
    birth: dt.date
    street: str
    city: str
    state: str
    zip_code: str
    phone: str
    email: str
    other_person: _Person | None  # the other side: a person ...
    other_company: str | None  # ... or a company
    counsel: _Lawyer
    other_counsel: _Lawyer
    witnesses: list[tuple[_Person, str]]  # (witness, role)
    incident: dt.date
    filed: dt.date
    amount: str
    facts: list[list[Piece]]  # indirect identifiers (and some direct ones) as ready-made sentences
    n_documents: int

    def age_on(self, day: dt.date) -> int:
        return day.year - self.birth.year - ((day.month, day.day) < (self.birth.month, self.birth.day))

    def other_side(self, rng: random.Random, caps: bool) -> list[Piece]:
        if self.other_company:
            return [_span(self.other_company, HOSPITAL)]
        return self.other_person.mention(rng, caps)


def _article(phrase: str) -> str:
    """'a' or 'an' before a phrase, as it is pronounced: 'an antique', 'an 18', 'a unit'."""
    word = phrase.split(maxsplit=1)[0].lower()
    vowel = word[:1] in "aeiou" and not word.startswith(("uni", "use", "usu", "uro", "eu"))
    return "an" if vowel or word.startswith("8") or word in ("11", "18") else "a"


def _a(phrase: str) -> str:
    return f"{_article(phrase)} {phrase}"


def _ordinal(day: int) -> str:
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd', 21: 'st', 22: 'nd', 23: 'rd', 31: 'st'}.get(day, 'th')}"


_DATE_FORMS = ("{month} {d}, {y}",) * 5 + ("{mm}/{dd}/{y}", "{y}-{mm}-{dd}", "{d} {month} {y}",
                                           "the |{nth} day of {month}, {y}")  # "the " is not part of the date
_DOCKET_DATE_FORMS = ("{mon} {d}, {y}", "{mon} {d} {y}")  # one per docket sheet


def _date(day: dt.date, rng: random.Random, form: str | None = None) -> list[Piece]:
    """A date in one of the forms courts write (`form`, else one drawn from _DATE_FORMS), as pieces."""
    text = (form or rng.choice(_DATE_FORMS)).format(
        d=day.day, mm=f"{day.month:02d}", dd=f"{day.day:02d}", y=day.year, month=day.strftime("%B"),
        mon=day.strftime("%b"), nth=_ordinal(day.day),
    )
    before, _, date = text.rpartition("|")
    return [before, _span(date, DATE)]


def _docket_number(rng: random.Random, area: str, filed: dt.date) -> str:
    case_type = _CASE_TYPES[area]
    return rng.choice(_DOCKET_FORMATS).format(
        yy=f"{filed.year % 100:02d}", yyyy=filed.year, c=case_type, cl=case_type.lower(), d=rng.randint(1, 4),
        n3=rng.randint(1, 999), n4=_digits(rng, 4), n5=_digits(rng, 5), n6=_digits(rng, 6),
    )


def _citation(rng: random.Random) -> str:
    """A pin cite to a reporter or to the record: '512 F.3d 1123, 1130', 'Tr. 45:12-19', 'Ex. 14 at 3'."""
    form = rng.randrange(3)
    if form == 0:
        page = rng.randint(1, 1999)
        return f"{rng.randint(1, 999)} {rng.choice(_REPORTERS)} {page}, {page + rng.randint(1, 30)}"
    if form == 1:
        line = rng.randint(1, 20)
        source = rng.choice(("Tr.", "Dep.", "Hr'g Tr."))
        return f"{source} {rng.randint(2, 240)}:{line}-{line + rng.randint(1, 5)}"
    return f"Ex. {rng.randint(1, 60)} at {rng.randint(1, 40)}"


def _amount(rng: random.Random, low: int = 1_200, high: int = 2_400_000) -> str:
    return f"${rng.randint(low, high):,}.{rng.randint(0, 99):02d}"


def _brand(rng: random.Random) -> str:
    return rng.choice(_BRAND_STEMS) + rng.choice(_BRAND_ENDINGS)


def _plate(rng: random.Random) -> str:
    letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return rng.choice((f"{rng.randint(1, 9)}{''.join(rng.choice(letters) for _ in range(3))}{_digits(rng, 3)}",
                       f"{''.join(rng.choice(letters) for _ in range(3))}-{_digits(rng, 4)}"))


def _area_facts(area: str, rng: random.Random, fake: Faker, party: _Person, company: str | None) -> list[list[Piece]]:
    """What only this case is about, phrased for its area of law (`company`: the other side, the employer in an
    employment case)."""
    if area == CONTRACT:
        facts = [[f"The agreement concerned {rng.randint(12, 4800):,} {rng.choice(_GOODS)} to be supplied under "
                  f"the {_brand(rng)} product line."],
                 [f"The shipment was stored in {_a(rng.choice(_OBJECT_FEATURES))} {rng.choice(_OBJECTS)} showroom at ",
                  _span(fake.street_address(), LOCATION), "."]]
    elif area == PERSONAL_INJURY:
        facts = [[f"The plaintiff suffered {rng.choice(_INJURIES)} and was treated at ",
                  _span(f"{fake.last_name()} Memorial Hospital", HOSPITAL), "."],
                 [f"The {rng.choice(_COLORS)} {rng.randint(1998, 2023)} {rng.choice(_VEHICLE_MAKES)} bearing plate ",
                  _span(_plate(rng), ID), " was involved."]]
        if rng.random() < 0.5:
            facts.append([f"The {_brand(rng)} {rng.choice(_PRODUCTS)} was recalled after the incident."])
    elif area == CRIMINAL:
        facts = [["The defendant is also known as \"", _span(rng.choice(_PET_NAMES), NAME), "\"."],
                 [f"Officers recovered {_a(rng.choice(_OBJECT_FEATURES))} {rng.choice(_OBJECTS)} and booked the "
                  f"defendant under booking number ", _span(_digits(rng, 8), ID), "."],
                 ["The complainant identified the defendant in a photo array shown by ",
                  _span(f"{fake.city()} Police Department", HOSPITAL), " detectives."]]
    elif area == FAMILY:
        children = rng.sample(_CHILD_NAMES, rng.randint(1, 3))
        about_children: list[Piece] = ["The parties' children are " if len(children) > 1 else "The parties' child is "]
        for i, child in enumerate(children):  # "Liam, aged 7; Emma, aged 4 and Noah, aged 2"
            separator = "" if i == 0 else " and " if i == len(children) - 1 else "; "
            about_children += [separator, _span(child, NAME), ", aged ", _span(str(rng.randint(1, 17)), AGE)]
        facts = [about_children + ["."],
                 [f"The parties dispute the {rng.choice(_PET_KINDS)} named {rng.choice(_PET_NAMES)} and the "
                  f"collection of {rng.choice(_COLLECTIBLES)}."]]
    else:
        facts = [[f"{'He' if party.male else 'She'} worked as {_a(_occupation(fake))} in the "
                  f"{rng.choice(_DEPARTMENTS)} department of ", _span(company, HOSPITAL), ", employee number ",
                  _span(_digits(rng, 6), ID), "."],
                 ["The supervisor at issue is ", _span(fake.name(), NAME), "."]]
    return facts


def _draw_case(seed: int, index: int, fake: Faker, bench: _Bench, rng: random.Random) -> _Case:
    fake.seed_instance(f"ppmlm-legal-case-faker:{seed}:{index}")
    area = rng.choice(CLASSES)
    party = _person(fake, rng)
    incident = dt.date(2012, 1, 1) + dt.timedelta(days=rng.randrange(10 * 365))
    filed = incident + dt.timedelta(days=rng.randint(20, 700))
    birth = incident - dt.timedelta(days=rng.randint(18 * 365, 80 * 365))
    company_side = area in (CONTRACT, EMPLOYMENT) or (area == PERSONAL_INJURY and rng.random() < 0.5)
    other_company = fake.company() if company_side else None
    other_person = None if company_side else _person(fake, rng)
    court = rng.choice([court for court in bench.courts if area in court.areas])
    if area == CRIMINAL:
        counsel = rng.choice([lawyer for lawyer in bench.lawyers if lawyer.firm.practice != "prosecution"])
        other_counsel = rng.choice([lawyer for lawyer in bench.lawyers if lawyer.firm.practice == "prosecution"])
    else:
        counsel, other_counsel = rng.sample([lawyer for lawyer in bench.lawyers if lawyer.firm.practice == "civil"], 2)
    witnesses = [(_person(fake, rng), rng.choice(_WITNESS_ROLES + (_a(_occupation(fake)),)))
                 for _ in range(rng.randint(1, 3))]
    event = rng.choice(_EVENTS)
    facts: list[list[Piece]] = [
        [f"The events followed {event} in ", _span(fake.city(), LOCATION), "."],
        [f"{_sentence(_a(rng.choice(_OBJECT_FEATURES)))} {rng.choice(_OBJECTS)} worth {_amount(rng)} is central to "
         "the dispute."],
        *_area_facts(area, rng, fake, party, other_company),
    ]
    if area != EMPLOYMENT:  # an employment case names the litigant's job at the employer (_area_facts)
        facts.insert(0, [f"{party.title} ", _span(party.last, NAME), f" works as {_a(_occupation(fake))}."])
    if rng.random() < 0.4:
        facts.append([f"{party.title} ", _span(party.last, NAME), " grew up in ", _span(fake.city(), LOCATION),
                      f" and collects {rng.choice(_COLLECTIBLES)}."])
    return _Case(
        user_id=f"C{index:06d}",
        area=area,
        docket=_docket_number(rng, area, filed),
        court=court,
        judge=rng.choice(court.judges),
        party=party,
        birth=birth,
        street=fake.street_address(),
        city=fake.city(),
        state=rng.choice(_US_STATES),
        zip_code=fake.zipcode(),
        phone=_phone(rng),
        email=f"{_slug(party.first)}{rng.choice(('.', '_', ''))}{_slug(party.last)}{rng.randint(1, 99)}"
              f"@{rng.choice(_EMAIL_DOMAINS)}",
        other_person=other_person,
        other_company=other_company,
        counsel=counsel,
        other_counsel=other_counsel,
        witnesses=witnesses,
        incident=incident,
        filed=filed,
        amount=_amount(rng),
        facts=facts,
        n_documents=rng.randint(MIN_DOCUMENTS, MAX_DOCUMENTS),
    )


def _judge_mention(judge: _Person, rng: random.Random, caps: bool) -> list[Piece]:
    if caps:
        return ["JUDGE ", _span(judge.last, NAME)]
    form = rng.randrange(4)
    if form == 0:
        return ["Hon. ", _span(judge.full, NAME)]
    if form == 1:
        return ["Judge ", _span(judge.last, NAME)]
    if form == 2:
        return ["The Honorable ", _span(judge.full, NAME)]
    return [_span(judge.full.upper(), NAME), ", J."]


def _age_phrase(age: int, rng: random.Random) -> list[Piece]:
    form = rng.randrange(3)
    if form == 0:
        return [f"{_article(str(age))} ", _span(str(age), AGE), "-year-old"]
    if form == 1:
        return ["aged ", _span(str(age), AGE)]
    return [_span(str(age), AGE), " years of age"]


def _acts(case: _Case, area: str, rng: random.Random, caps: bool) -> list[Piece]:
    """The subject of an allegation of `area` and the allegation: 'Mr. Smith was fired ...'."""
    role, other_role = _ROLES[case.area]
    if area in _LITIGANT_ACTS:
        subject = case.party.mention(rng, caps) if rng.random() < 0.6 else [f"the {role}"]
    else:
        subject = case.other_side(rng, caps) if rng.random() < 0.6 else [f"the {other_role}"]
    return [*subject, " ", rng.choice(_AREAS[area].allegations)]


def _caption(case: _Case, title: str, rng: random.Random, doc: _NoteText) -> None:
    """Court, parties, docket number and title, the parties' names in capitals as captions have them."""
    court = case.court.name.upper() if rng.random() < 0.5 else case.court.name
    doc.add(_span(court, HOSPITAL), "\n")
    party = case.party.full.upper()
    if case.area == CRIMINAL:
        doc.add("THE STATE OF ", _span(case.state.upper(), LOCATION), " v. ", _span(party, NAME), ", Defendant.\n")
    elif case.area == FAMILY:
        doc.add("In re the Marriage of ", _span(party, NAME), ", Petitioner, and ",
                _span(case.other_person.full.upper(), NAME), ", Respondent.\n")
    else:
        other = case.other_company or case.other_person.full
        doc.add(_span(party, NAME), ", Plaintiff, v. ", _span(other.upper(), HOSPITAL if case.other_company else NAME),
                ", Defendant.\n")
    doc.add(rng.choice(("Case No. ", "No. ", "Docket No. ", "Case ", "Index No. ")), _span(case.docket, ID), "\n",
            title, "\n\n")


def _add_facts(case: _Case, rng: random.Random, doc: _NoteText, share: float = FACT_SHARE) -> None:
    for fact in case.facts:
        if rng.random() < share:
            doc.add(*fact, " ")


def _statement(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
               doc: _NoteText) -> None:
    """A complaint, petition or statement of facts: who the parties are, what happened, the claims."""
    role, other_role = _ROLES[case.area]
    _caption(case, rng.choice(_TITLES["statement"]), rng, doc)
    doc.add("1. ", _span(case.party.full, NAME), f" (the \"{role}\") is ", *_age_phrase(case.age_on(day), rng))
    if rng.random() < 0.5:
        doc.add(", residing at ", _span(case.street, LOCATION), ", ", _span(case.city, LOCATION), ", ",
                _span(case.state, LOCATION), " ", _span(case.zip_code, LOCATION), ".\n")
    else:
        doc.add(", a resident of ", _span(case.city, LOCATION), ", ", _span(case.state, LOCATION), ".\n")
    if case.other_company:
        doc.add("2. ", _span(case.other_company, HOSPITAL), f" (the \"{other_role}\") is a company doing business in ",
                _span(case.state, LOCATION), ".\n")
    elif case.area == CRIMINAL:
        doc.add("2. The complainant, ", *case.other_person.mention(rng, False), ", reported the matter to police.\n")
    else:
        doc.add("2. ", _span(case.other_person.full, NAME), f" (the \"{other_role}\") resides in ",
                _span(case.state, LOCATION), ".\n")
    claims = _join([rng.choice(_AREAS[area].claims) for area in areas])
    nature = f"The State charges {claims}" if case.area == CRIMINAL else f"This is an action for {claims}"
    doc.add(f"3. {nature}. {rng.choice(_JURISDICTION)}.\n4. On ", *_date(case.incident, rng), ", ",
            *_acts(case, areas[0], rng, doc.caps), ".\n")
    paragraph = 5
    for fact in case.facts:
        if rng.random() < FACT_SHARE:
            doc.add(f"{paragraph}. ", *fact, "\n")
            paragraph += 1
    for area in areas[1:]:
        doc.add(f"{paragraph}. In addition, ", *_acts(case, area, rng, doc.caps), ".\n")
        paragraph += 1
    for phrase in rng.sample(_PLEADING_PHRASES, 2):
        doc.add(f"{paragraph}. {phrase.format(role=role)}.\n")
        paragraph += 1
    doc.add(f"{paragraph}. The {role} has incurred {_amount(rng, 500, 90_000)} in fees and costs to date.\n")
    if rng.random() < 0.3:
        doc.add(f"{paragraph + 1}. The {role} may be contacted through counsel or at ", _span(case.phone, PHONE))
        if rng.random() < 0.5:
            doc.add(" or ", _span(case.email, EMAIL))
        doc.add(".\n")
    doc.add("\n")
    for count, area in enumerate(areas, 1):
        claims = rng.sample(_AREAS[area].claims, rng.randint(1, 2))
        doc.add(f"COUNT {'I' * count} - {claims[0].upper()}\n",
                f"The {role} realleges the paragraphs above. {_sentence(rng.choice(_AREAS[area].evidence))} "
                f"will show that {rng.choice(_AREAS[area].arguments)}. The {role} is entitled to relief for "
                f"{_join(claims)}.\n")
    relief = [item for area in areas for item in rng.sample(_AREAS[area].relief, 2)]
    doc.add(f"\nWHEREFORE, the {role} requests {_join(relief)}")
    if rng.random() < FACT_SHARE:
        doc.add(f", in an amount not less than {case.amount}")
    doc.add(".\n\nDated: ", *_date(day, rng), "\nRespectfully submitted,\n",
            *case.counsel.signature(rng))
    doc.add(f"\n\nCERTIFICATE OF SERVICE\nI certify that a true copy of the foregoing "
            f"{rng.choice(('was', 'has been'))} {rng.choice(_SERVICE)} on the date above, in accordance with the "
            f"applicable rules.")


def _minutes(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
             doc: _NoteText) -> None:
    """Minutes of a hearing: who attended, what was argued and heard, what the court decided (in capitals
    when the clerk keeps them so)."""
    role, other_role = _ROLES[case.area]
    _caption(case, rng.choice(_TITLES["minutes"]), rng, doc)
    clerk = rng.choice(case.court.clerks)
    doc.add("Date: ", *_date(day, rng), f"   Time: {rng.choice(_TIMES)}   Courtroom {rng.randint(1, 24)}\n")
    doc.add("Presiding: ", *_judge_mention(case.judge, rng, doc.caps), ". Clerk: ", *clerk.mention(rng, doc.caps),
            ". Court reporter: ", _span(rng.choice(case.court.reporters).full, NAME), ".\n")
    doc.add("Appearances: ", *case.counsel.mention(rng, doc.caps), f" for the {role}; ",
            *case.other_counsel.mention(rng, doc.caps), f" for the {other_role}. The {role}, ",
            *case.party.mention(rng, doc.caps),
            rng.choice((", appeared in person", ", appeared by video", ", was present", ", did not appear")), ".\n\n")
    motion = rng.choice(_AREAS[areas[0]].motions)
    doc.add(f"{rng.choice(_HEARING_OPENINGS)} on the {rng.choice((role, other_role))}'s {motion}. "
            f"{rng.choice(_PROCEDURAL_HISTORY)}. {rng.choice(_COURT_ACTIONS)}. ")
    for area in areas:
        content = _AREAS[area]
        ours, theirs = rng.sample(content.arguments, 2)
        doc.add(f"Counsel for the {role} argued that {ours}, pointing to {rng.choice(content.evidence)} "
                f"({_citation(rng)}); counsel for the {other_role} responded that {theirs}, citing "
                f"{rng.choice(content.authorities)}. ")
    for witness, witness_role in case.witnesses:
        if rng.random() < FACT_SHARE:
            doc.add(_span(witness.full, NAME), f", {witness_role}, testified about the events of ",
                    *_date(case.incident, rng), ". ")
    doc.add("\n")
    _add_facts(case, rng, doc)
    doc.add(f"\n{'. '.join(rng.sample(_COURT_REMARKS, 2))}. {rng.choice(_OUTCOMES)}. ")
    if rng.random() < 0.6:
        later = day + dt.timedelta(days=rng.choice((14, 21, 30, 45, 60)))
        doc.add("The next hearing is set for ", *_date(later, rng), f" at {rng.choice(_TIMES)}. ")
    doc.add("\nMinutes entered by ", _span(clerk.full, NAME), ", Deputy Clerk.")


def _order(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
           doc: _NoteText) -> None:
    """A procedural order: deadlines, mediation, trial date, how to file."""
    role, other_role = _ROLES[case.area]
    _caption(case, rng.choice(_TITLES["order"]), rng, doc)
    motion = rng.choice(_AREAS[areas[0]].motions)
    doc.add(f"The Court, having reviewed the parties' joint report and the {rng.choice((role, other_role))}'s "
            f"{motion}, ORDERS as follows:\n")
    deadline = day
    number = 1
    for text in rng.sample(_DEADLINES, rng.randint(3, 5)):
        deadline += dt.timedelta(days=rng.choice((14, 21, 30, 45, 60)))
        doc.add(f"{number}. {text} by ", *_date(deadline, rng), ".\n")
        number += 1
    evidence = [rng.choice(_AREAS[area].evidence) for area in areas]
    if rng.random() < 0.5:
        doc.add(f"{number}. The {rng.choice((role, other_role))} shall pay {_amount(rng, 250, 25_000)} in fees "
                f"incurred on the motion within thirty days.\n")
        number += 1
    doc.add(f"{number}. Discovery shall include {_join(evidence)}")
    if rng.random() < FACT_SHARE:
        doc.add(f", and the damages computation of {case.amount}")
    doc.add(".\n")
    if rng.random() < 0.5:
        deadline += dt.timedelta(days=rng.choice((14, 30)))
        doc.add(f"{number + 1}. The parties shall attend mediation before ",
                _span(rng.choice(bench.mediators).full, NAME), " no later than ", *_date(deadline, rng), ".\n")
    doc.add(". ".join(rng.sample(_ORDER_RULES, 3)), ".\n")
    trial = deadline + dt.timedelta(days=rng.choice((30, 60, 90)))
    doc.add("Trial is set for ", *_date(trial, rng),
            f" at {rng.choice(_TIMES)}, estimated at {rng.randint(2, 12)} days. ")
    _add_facts(case, rng, doc, FACT_SHARE / 2)
    doc.add(f"\nAll papers shall be {rng.choice(_SERVICE)}")
    if rng.random() < 0.3:
        case_path = "".join(c for c in case.docket.lower() if c.isalnum())
        doc.add(" through the portal at ", _span(f"https://efile.{case.court.domain}/cases/{case_path}", URL))
    doc.add(". Questions to the clerk's office at ", _span(case.court.phone, PHONE), ".\n")
    doc.add(f"{rng.choice(_CLOSINGS)}.\nDated: ", *_date(day, rng), "\n",
            *_judge_mention(case.judge, rng, False))


def _judgment(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
              doc: _NoteText) -> None:
    """A judgment or opinion: background, discussion of each issue, conclusion."""
    role, other_role = _ROLES[case.area]
    _caption(case, rng.choice(_TITLES["judgment"]), rng, doc)
    doc.add("I. BACKGROUND\n", _span(case.party.full, NAME), f", the {role}, was ",
            *_age_phrase(case.age_on(case.incident), rng), " at the time of the events. On ",
            *_date(case.incident, rng), ", ", *_acts(case, areas[0], rng, doc.caps), ". ")
    _add_facts(case, rng, doc)
    if rng.random() < FACT_SHARE:
        doc.add(f"The {role} claims {case.amount}. ")
    doc.add("The action was filed on ", *_date(case.filed, rng),
            f". {rng.choice(_PROCEDURAL_HISTORY)}.\n\nII. DISCUSSION\n", ". ".join(rng.sample(_STANDARDS, 3)), ". ")
    for area in areas:
        content = _AREAS[area]
        ours, theirs = rng.sample(content.arguments, 2)
        doc.add(f"As to {rng.choice(content.claims)}, the {role} argues that {ours}, relying on "
                f"{rng.choice(content.authorities)} ({_citation(rng)}); the {other_role} answers that {theirs} "
                f"({_citation(rng)}). The Court has considered {_join(rng.sample(content.evidence, 2))} "
                f"({_citation(rng)}). ")
        if case.witnesses and rng.random() < 0.5:
            witness, witness_role = rng.choice(case.witnesses)
            doc.add("The testimony of ", *witness.mention(rng, False), f", {witness_role}, was credible. ")
        doc.add(f"The Court finds that {rng.choice(content.holdings)}.\n")
    relief = [rng.choice(_AREAS[area].relief) for area in areas]
    doc.add(f"\nIII. CONCLUSION\nThe Court awards {_join(relief)}, with taxable costs of "
            f"{_amount(rng, 150, 30_000)}. {rng.choice(_CLOSINGS)}.\nDated: ", *_date(day, rng), "\n",
            *_judge_mention(case.judge, rng, False), ", ", _span(case.court.name, HOSPITAL))


def _docket_sheet(case: _Case, day: dt.date, areas: Sequence[str], rng: random.Random, bench: _Bench,
                  doc: _NoteText) -> None:
    """A docket sheet: the filings and events since the case was filed, one dated line each (in capitals:
    only ever built in a capitals document)."""
    doc.add(rng.choice(("DOCKET SHEET", "REGISTER OF ACTIONS", "CASE SUMMARY", "DOCKET REPORT")), " - ",
            _span(case.court.name, HOSPITAL), "\nCASE ", _span(case.docket, ID), " ", *case.party.mention(rng, True),
            " V. ", *case.other_side(rng, True), "\n", *_judge_mention(case.judge, rng, True), "\n")
    entry_day = case.filed
    form = rng.choice(_DOCKET_DATE_FORMS)
    entries = [entry for area in areas for entry in rng.sample(_AREAS[area].docket, rng.randint(3, 5))]
    entries += rng.sample(_GENERAL_DOCKET, rng.randint(4, 8))
    rng.shuffle(entries)
    for entry in entries:
        doc.add(*_date(entry_day, rng, form), " ", entry)
        extra = rng.randrange(6)
        if extra == 0:
            doc.add(" BY ", *rng.choice((case.counsel, case.other_counsel)).mention(rng, True))
        elif extra == 1:
            hearing = entry_day + dt.timedelta(days=rng.choice((7, 14, 21)))
            doc.add(", HRG SET ", *_date(hearing, rng, form), f" {rng.choice(_TIMES)} "
                    f"DEPT {rng.randint(1, 40)}")
        elif extra == 2:
            doc.add(", ", *case.party.mention(rng, True), " PRESENT W/ COUNSEL")
        elif extra == 3 and entry_day == case.filed:
            doc.add(". FILING FEE PAID, RECEIPT #", _span(_digits(rng, 7), ID))
        elif extra == 4:
            doc.add(f", PAYMENT OF {_amount(rng, 40, 9_000)} RECEIVED")
        doc.add(".\n")
        entry_day += dt.timedelta(days=rng.choice((1, 3, 7, 14, 30)))
    if rng.random() < FACT_SHARE:
        doc.add(f"AMOUNT IN CONTROVERSY: {case.amount}.\n")
    _add_facts(case, rng, doc, FACT_SHARE / 2)
    doc.add("\nCLERK: ", *rng.choice(case.court.clerks).mention(rng, True))


_PROSE_DOCUMENTS = (_statement, _minutes, _order, _judgment)
_PROSE_WEIGHTS = (0.2, 0.3, 0.25, 0.25)


def _draw_documents(case: _Case, bench: _Bench, rng: random.Random) -> list[dict]:
    records = []
    day = case.filed
    for k in range(1, case.n_documents + 1):
        area = case.area if rng.random() < SAME_AREA_SHARE else rng.choice(CLASSES)
        areas = [area]
        if rng.random() < SECOND_ISSUE_SHARE:
            areas.append(rng.choice([other for other in CLASSES if other != area]))
        caps = rng.random() < CAPS_DOCUMENT_SHARE
        doc = _NoteText(caps)
        if caps:
            build = rng.choice((_docket_sheet, _minutes))
        elif k == 1:
            build = _statement  # a case opens with its complaint or petition
        else:
            build = rng.choices(_PROSE_DOCUMENTS, _PROSE_WEIGHTS)[0]
        build(case, day, areas, rng, bench, doc)
        records.append({
            "doc_id": f"{case.user_id}-{k:02d}",
            "user_id": case.user_id,
            "text": doc.text(),
            "label": area,
            "phi": doc.phi,
        })
        day += dt.timedelta(days=rng.choice((1, 7, 14, 21, 30, 45, 60, 90)))
    return records


def generate_legal_corpus(n_users: int, seed: int = 0) -> list[dict]:
    """Documents of `n_users` synthetic cases (3 to 12 each), identical for the same (n_users, seed).

    Case i depends only on (seed, i): a corpus of more cases extends a smaller one unchanged.
    """
    fake = Faker("en_US")
    bench = _draw_bench(seed, fake)
    records: list[dict] = []
    for index in range(n_users):
        rng = random.Random(f"ppmlm-legal-case:{seed}:{index}")
        case = _draw_case(seed, index, fake, bench, rng)
        records.extend(_draw_documents(case, bench, rng))
    return records
